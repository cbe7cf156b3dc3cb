import type { Middleware } from 'koa';
import type { RelayState } from '../../core/http/context.js';
import { AppError } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import { SIDES, type Side } from '../../core/sides.js';
import { recordTokenCheck } from '../metrics.js';
import type { SessionConfig } from '../variables.js';
import type { SessionStore, Stamps } from './store.js';
import type { SessionClaims, SessionTokens, SubjectKind } from './tokens.js';

/** Where a token was checked, as metrics name it. */
export type TokenRoute = 'read' | 'join' | 'action' | 'token' | 'ack' | 'revoke';

/** Where a token travels: the HTTP `Authorization` header, or the member `token` of a socket join. */
export type TokenPlace = 'headers' | 'event';

const FIELD: Record<TokenPlace, string> = { headers: '/headers/authorization', event: '/event/token' };

/** What a token must be bound to for this request: its subject's kind and identity, and the sides that fit. */
export interface Binding {
  kind: SubjectKind;
  sub: string;
  sides: readonly Side[];
}

type Outcome = 'invalid' | 'expired' | 'revoked';

const MESSAGES: Record<Outcome, string> = {
  invalid: 'The session token is invalid.',
  expired: 'The session token expired.',
  revoked: 'session ended',
};

/** How long a pod may answer from a subject side's stamps before reading them again. */
const STAMPS_FRESH_MS = 1000;
/** Subject sides whose stamps a pod keeps at most: anyone can present well-signed tokens of many subjects. */
const STAMPS_KEPT = 10_000;

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive); other schemes are none. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^bearer(?:[ \t]+(.*))?$/i.exec(header ?? '');
  return match ? (match[1] ?? '').trim() : undefined;
}

/**
 * Checks a session token for one request (docs/api.md#sessions), in order: the token itself (SessionTokens), its
 * binding to the request, then revocation. The subject side's stamps are read with one MGET and kept at most a
 * second, so a revocation reaches every pod within that.
 */
export class SessionCheck {
  private readonly stamps = new Map<string, { until: number; stamps: Promise<Stamps> }>();

  constructor(
    private readonly tokens: SessionTokens,
    private readonly store: SessionStore,
    /** AUTH_READS: whether a pair's reads and joins need a token. */
    readonly reads: SessionConfig['reads'],
    private readonly now: () => number = Date.now,
  ) {}

  /** The token's claims, or a 401 naming `place`'s field. */
  async check(
    token: string,
    binding: Binding,
    route: TokenRoute,
    place: TokenPlace,
    log: Logger,
  ): Promise<SessionClaims> {
    const refuse = (outcome: Outcome, reason: string, kid: string | undefined) =>
      tokenRefusal(outcome, reason, route, place, log, kid);
    const verdict = await this.tokens.verify(token);
    if (!verdict.ok) {
      throw refuse(verdict.code === 'AUTH_EXPIRED' ? 'expired' : 'invalid', verdict.reason, verdict.kid);
    }
    const { claims, kid } = verdict;
    if (claims.kind !== binding.kind || claims.sub !== binding.sub || !binding.sides.includes(claims.side)) {
      throw refuse('invalid', 'binding', kid);
    }
    const stamps = await this.stampsOf(claims.sub, claims.side);
    if (
      (stamps.rev !== undefined && stamps.rev !== claims.rev) ||
      (claims.pin !== 0 && stamps.pin !== claims.pin)
    ) {
      throw refuse('revoked', 'revoked', kid);
    }
    recordTokenCheck(route, 'valid');
    return claims;
  }

  /** The refusal of a request without a token where one is required. */
  required(route: TokenRoute, log: Logger): AppError {
    recordTokenCheck(route, 'required');
    log.info('session token refused', { route, outcome: 'required', reason: 'required' });
    return new AppError('AUTH_REQUIRED', 'This read needs a session token of the pair.', {
      headers: route === 'read' ? CHALLENGE : {},
    });
  }

  /** Drops this pod's stamps of a subject side it just changed, so its own next check reads them again. */
  forget(subject: string, side: Side): void {
    this.stamps.delete(stampsId(subject, side));
  }

  private stampsOf(subject: string, side: Side): Promise<Stamps> {
    const id = stampsId(subject, side);
    const now = this.now();
    const kept = this.stamps.get(id);
    if (kept !== undefined && kept.until > now) return kept.stamps;
    this.stamps.delete(id);
    if (this.stamps.size >= STAMPS_KEPT) this.stamps.delete(this.stamps.keys().next().value!);
    const stamps = this.store.stamps(subject, side);
    this.stamps.set(id, { until: now + STAMPS_FRESH_MS, stamps });
    stamps.catch(() => {
      if (this.stamps.get(id)?.stamps === stamps) this.stamps.delete(id);
    });
    return stamps;
  }
}

const stampsId = (subject: string, side: Side) => `${side}:${subject}`;

/** A token refused: counted, logged without the token, and the 401 naming `place`'s field. */
function tokenRefusal(
  outcome: Outcome,
  reason: string,
  route: TokenRoute,
  place: TokenPlace,
  log: Logger,
  kid?: string,
): AppError {
  recordTokenCheck(route, outcome);
  log.info('session token refused', { route, outcome, reason, ...(kid === undefined ? {} : { kid }) });
  return new AppError(outcome === 'invalid' ? 'AUTH_INVALID' : 'AUTH_EXPIRED', MESSAGES[outcome], {
    details: [
      { field: FIELD[place], message: reason === 'revoked' ? 'session ended' : `refused: ${reason}` },
    ],
    headers: route === 'read' ? CHALLENGE : {},
  });
}

/**
 * A token that passed its checks but whose side does not fit what the request turned out to touch (an HTTP ack
 * of a record to the other side): the binding refusal of a token that names the wrong side from the start.
 */
export function bindingRefusal(route: TokenRoute, log: Logger): AppError {
  return tokenRefusal('invalid', 'binding', route, 'headers', log);
}

/** The header a refused read carries (RFC 6750). */
const CHALLENGE = { 'WWW-Authenticate': 'Bearer' };

/**
 * A read of one subject's records (the path's `id`): a token, when given, must fit it; none is refused under
 * AUTH_READS=required, and answered as without sessions under `open`.
 */
export function sessionRead(check: SessionCheck, kind: SubjectKind): Middleware<RelayState> {
  const sides = kind === 'pair' ? SIDES : (['wallet'] as const);
  return async (ctx, next) => {
    const token = bearerToken(ctx.get('authorization') || undefined);
    if (token === undefined) {
      if (check.reads === 'required') throw check.required('read', ctx.state.log);
      return next();
    }
    await check.check(token, { kind, sub: String(ctx.params.id), sides }, 'read', 'headers', ctx.state.log);
    return next();
  };
}
