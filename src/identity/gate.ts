import { createHash } from 'node:crypto';
import { actionTypeRule, unsignedGuard } from '../action-types/index.js';
import { newRecordId } from '../core/record-id.js';
import { OTHER_SIDE, SIDES, type Side } from '../core/sides.js';
import type { AuthConfig } from './variables.js';
import { PURPOSE, type SignedRoute } from '../core/signed-routes.js';
import { AppError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { recordAuth } from './metrics.js';
import { isRedisUnavailable } from '../core/redis/clients.js';
import { isIdentifier } from '../core/validation/common-schema.js';
import type { SignatureVerifier } from './signature.js';
import type { AuthStore } from './store.js';
import type { SessionCheck, TokenPlace, TokenRoute } from './session/check.js';
import { SIGNING_FIELDS, verifyCredential, withoutCredential, type CredentialLocation } from './verify.js';

/** What is being admitted: the route, where its fields are, and for a join its path's side. */
export interface AuthRequest {
  route: SignedRoute;
  location: CredentialLocation;
  body: Readonly<Record<string, unknown>>;
  /** The socket path of a join. */
  side?: Side;
  /** The wkIdentity the path names (an ack), where the body has none. */
  identity?: string;
  /** A session token: the `Authorization: Bearer` header's, or a join's member `token`. */
  token?: string;
  log: Logger;
}

/** An admitted request: the body later layers see, and how to unspend its nonce if the relay then fails it. */
export interface Admitted {
  body: Record<string, unknown>;
  /** A verified write: the id its record goes by, remembered with the spent nonce. */
  writeId?: string;
  /**
   * A byte-identical resend of a verified write (docs/api.md#resends): the id that write's record went by. The
   * route answers what that write stored and writes nothing.
   */
  resendOf?: string;
  /** Call when the request ends before anything was written: its honest retry then works once. */
  release(): Promise<void>;
  /** Whether a credential passed (the request is one of the pair's), not merely a mode let it in. */
  verified: boolean;
  /** The side a session token that passed names (an ack's record must be of that side's direction). */
  tokenSide?: Side;
}

/** The routes a session token may authenticate (a sync or a recovery xpub write ignores one). */
const TOKEN_ROUTES: Partial<Record<SignedRoute, TokenRoute>> = {
  action: 'action',
  token: 'token',
  join: 'join',
  ack: 'ack',
};
const TOKEN_PLACE: Record<CredentialLocation, TokenPlace> = { body: 'headers', event: 'event' };

/** Which credential spent a nonce: equal for a byte-identical resend (same message, so the same body). */
function credentialDigest(body: Readonly<Record<string, unknown>>): string {
  return createHash('sha256')
    .update(`${String(body.signature)}\n${String(body.message)}`)
    .digest('base64url');
}

const NOTHING_SPENT = async () => {};

/**
 * Modes, pins and nonces around the pure checks of verify.ts, the same for HTTP writes and socket joins.
 * A request refused at any step spends nothing: the nonce is spent last, once every check passed.
 */
export class AuthGate {
  constructor(
    private readonly settings: AuthConfig,
    private readonly store: AuthStore,
    private readonly verifier: SignatureVerifier,
    private readonly now: () => number = Date.now,
    /** Session tokens: a passing one is a credential for its side, as a verified signature is. */
    private readonly sessions?: SessionCheck,
  ) {}

  /**
   * Admits the request or throws a 401 AppError (503 when Redis cannot say). The body later layers see has no
   * credential; an unsigned body keeps `witnessScript` (a sync record's own field).
   */
  async admit(request: AuthRequest): Promise<Admitted> {
    const { route, log } = request;
    try {
      const { label, ...admitted } = await this.decide(request);
      recordAuth(route, label);
      return { ...admitted, verified: label === 'verified' || label === 'session' };
    } catch (err) {
      if (err instanceof AuthRefusal) {
        recordAuth(route, `refused_${err.reason}`);
        log.info('auth refused', { route, reason: err.reason });
      } else if (isRedisUnavailable(err)) {
        recordAuth(route, 'unavailable');
      }
      throw err;
    }
  }

  private async decide(request: AuthRequest): Promise<Omit<Admitted, 'verified'> & { label: string }> {
    const { route, location, body } = request;
    const mode = route === 'recoverypub' ? 'required' : this.settings.modes[route];
    const present = SIGNING_FIELDS.filter((field) => Object.hasOwn(body, field));
    const signed = present.length === SIGNING_FIELDS.length;
    const rest = signed ? withoutCredential(body) : withoutSigningFields(body);
    const tokenRoute = TOKEN_ROUTES[route];
    // A join's token is checked whatever its mode: joins are reads too (AUTH_READS).
    if (request.token !== undefined && tokenRoute !== undefined && (mode !== 'off' || route === 'join')) {
      return this.admitToken(request, request.token, tokenRoute, present.length > 0, rest);
    }
    if (route === 'join' && this.sessions?.reads === 'required' && (present.length === 0 || mode === 'off')) {
      throw this.sessions.required('join', request.log);
    }
    if (mode === 'off') return { label: 'unchecked', body: rest, release: NOTHING_SPENT };
    if (present.length > 0 && !signed) {
      const missing = SIGNING_FIELDS.find((field) => !present.includes(field))!;
      throw new AuthRefusal('AUTH_INVALID', 'partial', {
        field: `/${location}/${missing}`,
        message: 'is required with the other credential fields',
      });
    }
    if (!signed) {
      const admitted = await this.admitUnsigned(request, rest, mode === 'required');
      return { label: 'unsigned', body: admitted, release: NOTHING_SPENT };
    }

    const nowMs = this.now();
    const windowMs = this.settings.windowSeconds * 1000;
    const verdict = verifyCredential(
      {
        purpose: PURPOSE[route],
        location,
        body,
        ...(request.identity ? { identity: request.identity } : {}),
      },
      this.verifier,
      nowMs,
      windowMs,
    );
    if (!verdict.ok) {
      throw new AuthRefusal(verdict.code, verdict.reason, { field: verdict.field, message: verdict.message });
    }
    // Kept until the message leaves the window (a second's margin for clocks): relative, so Redis's clock and
    // the pods' never meet.
    // The nonce remembers which credential spent it and the id its write goes by, so a resend can be answered.
    const writeId = newRecordId();
    const credential = credentialDigest(body);
    const value = `${credential} ${writeId}`;
    const ttlMs = verdict.timestamp + windowMs + 1000 - nowMs;
    const earlier = await this.store.spendNonce(verdict.wkIdentity, verdict.nonce, ttlMs, value);
    if (earlier !== undefined) {
      const [earlierCredential, firstId] = earlier.split(' ');
      if (location === 'body' && earlierCredential === credential && firstId !== undefined) {
        return { label: 'resent', body: rest, resendOf: firstId, release: NOTHING_SPENT };
      }
      throw replayed(location);
    }
    const release = () => this.store.releaseNonce(verdict.wkIdentity, verdict.nonce, value);
    if (this.settings.pinDays > 0) {
      await this.store
        .pin(verdict.wkIdentity, senderSides(request), this.settings.pinDays)
        .catch(async (err) => {
          await release();
          throw err;
        });
    }
    return { label: 'verified', body: rest, writeId, release };
  }

  /**
   * A session token: refused beside the signature fields; else, once it fits the request's pair and sender side,
   * a credential as a verified signature is (its side pinned the same way), spending no nonce.
   */
  private async admitToken(
    request: AuthRequest,
    token: string,
    tokenRoute: TokenRoute,
    signing: boolean,
    rest: Record<string, unknown>,
  ): Promise<Omit<Admitted, 'verified'> & { label: string }> {
    const place = TOKEN_PLACE[request.location];
    if (signing) {
      throw new AuthRefusal('AUTH_INVALID', 'token_and_signature', {
        field: place === 'headers' ? '/headers/authorization' : '/event/token',
        message: 'a session token or the signature fields, not both',
      });
    }
    if (this.sessions === undefined) throw new Error('a token reached a gate without sessions');
    const wkIdentity = request.identity ?? String(request.body.wkIdentity);
    const sides = tokenSides(request);
    const claims = await this.sessions.check(
      token,
      { kind: 'pair', sub: wkIdentity, sides },
      tokenRoute,
      place,
      request.log,
    );
    if (this.settings.pinDays > 0) {
      await this.store.pin(wkIdentity, senderSides(request), this.settings.pinDays);
    }
    return {
      label: 'session',
      body: rest,
      writeId: newRecordId(),
      release: NOTHING_SPENT,
      tokenSide: claims.side,
    };
  }

  /** The unsigned body as later layers see it, or a refusal. */
  private async admitUnsigned(
    request: AuthRequest,
    rest: Record<string, unknown>,
    required: boolean,
  ): Promise<Record<string, unknown>> {
    const { route, body } = request;
    const guard = route === 'action' ? unsignedGuard(body.action, this.settings.unsignedActions) : undefined;
    // Sent unsigned on purpose by the apps (a recovery request), so neither a mode nor a pin refuses them.
    if (guard === 'exempt') return rest;
    if (required) throw new AuthRefusal('AUTH_REQUIRED', 'required');
    if (this.settings.pinDays === 0 || (route === 'join' && !this.settings.pinJoins)) return rest;
    const wkIdentity = body.wkIdentity;
    // A body without a valid identity is refused by validation next; there is no pin to look up.
    if (!isIdentifier(wkIdentity)) return rest;
    // An action of a type the table does not know could come from either side: any pin of the pair refuses it.
    const sides = guard === 'unknown' ? SIDES : senderSides(request);
    if (sides.length === 0 || (await this.store.pinned(wkIdentity, sides)).length === 0) return rest;
    // An unsigned sync still pairs: only its key token, which a pin guards, is ignored.
    if (route === 'sync') {
      const { keyToken: _ignored, ...record } = rest;
      return record;
    }
    throw new AuthRefusal(
      'AUTH_REQUIRED',
      'pinned',
      undefined,
      'This side of the pair signs its requests; an unsigned one is refused.',
    );
  }
}

/** Which side of the pair sent this request, by what it writes (the side a pin belongs to). */
function senderSides({ route, body, side }: AuthRequest): Side[] {
  switch (route) {
    case 'action': {
      // A request to the key comes from the wallet, a reply to the wallet from the key; other types: no side.
      const rule = typeof body.action === 'string' ? actionTypeRule(body.action) : undefined;
      return rule ? [OTHER_SIDE[rule.side]] : [];
    }
    case 'token':
      return SIDES.filter((tokenSide) => body[`${tokenSide}Token`] !== undefined);
    case 'join':
      return side ? [side] : [];
    case 'sync':
      return body.keyToken !== undefined && body.keyToken !== null && body.keyToken !== '' ? ['key'] : [];
    case 'recoverypub':
    case 'ack':
      return [];
  }
}

/**
 * The sides a token may name for this request: an action's sender (either side for a type the table does not
 * know), the one side of the push tokens given (both at once fit no token), a join's path; an ack's either (its
 * record must then be of the token's side).
 */
function tokenSides(request: AuthRequest): readonly Side[] {
  if (request.route === 'ack') return SIDES;
  if (request.route === 'action') {
    const sides = senderSides(request);
    return sides.length === 0 ? SIDES : sides;
  }
  const sides = senderSides(request);
  return sides.length === 1 ? sides : [];
}

function replayed(location: CredentialLocation): AuthRefusal {
  return new AuthRefusal('AUTH_REPLAYED', 'replayed', {
    field: `/${location}/message/nonce`,
    message: 'this nonce was already used',
  });
}

function withoutSigningFields(body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const rest = { ...body };
  for (const field of SIGNING_FIELDS) delete rest[field];
  return rest;
}

type AuthCode = 'AUTH_INVALID' | 'AUTH_EXPIRED' | 'AUTH_REPLAYED' | 'AUTH_REQUIRED';

const MESSAGES: Record<AuthCode, string> = {
  AUTH_INVALID: 'The request’s identity signature is invalid.',
  AUTH_EXPIRED: 'The signed message is outside the accepted time window.',
  AUTH_REPLAYED: 'This signed message was already used.',
  AUTH_REQUIRED: 'This request must be signed by one of the pair’s keys.',
};

/** A 401 with the word metrics and logs carry (the failed check, or required, partial, pinned, replayed). */
class AuthRefusal extends AppError {
  constructor(
    code: AuthCode,
    readonly reason: string,
    detail?: { field: string; message: string },
    message = MESSAGES[code],
  ) {
    super(code, message, detail ? { details: [detail] } : {});
  }
}
