import type { MountedRoute, WriteGuards } from '../../core/feature.js';
import { DEFAULT_BODY_LIMIT } from '../../core/http/body.js';
import { ok, type RelayContext } from '../../core/http/context.js';
import type { RouteSpec } from '../../core/http/route-spec.js';
import { AppError, unavailable, type ErrorCode } from '../../core/errors.js';
import { SIDES, type Side } from '../../core/sides.js';
import { validator } from '../../core/validation/validate.js';
import { recordRevocation, recordSession } from '../metrics.js';
import type { SignatureVerifier } from '../signature.js';
import type { AuthStore } from '../store.js';
import type { AuthConfig, SessionConfig } from '../variables.js';
import { SIGNING_FIELDS, verifyCredential, withoutCredential, type Verified } from '../verify.js';
import { issuedForOther, newChallenge, type ChallengeFor } from './challenge.js';
import { bearerToken, type SessionCheck } from './check.js';
import {
  challengeBody,
  exchangeBody,
  exchangeFields,
  revokeBody,
  sessionChallenge,
  session,
  sessionRevoked,
} from './schema.js';
import type { SessionStore } from './store.js';
import type { SessionTokens } from './tokens.js';

export { sessionChallenge, session, sessionRevoked };

interface SubjectBody {
  wkIdentity?: string;
  side?: Side;
  walletIdentity?: string;
}

const parseChallenge = validator<SubjectBody>('body', challengeBody);
const parseExchange = validator<SubjectBody & { challenge: string }>('body', exchangeFields);
const parseRevoke = parseChallenge;

/** The subject a body names: a pair's side, or a wallet alone (whose side is always `wallet`). */
function subjectOf(body: SubjectBody): ChallengeFor {
  return body.walletIdentity !== undefined
    ? { subject: body.walletIdentity, kind: 'wallet', side: 'wallet' }
    : { subject: body.wkIdentity!, kind: 'pair', side: body.side! };
}

/** The session parts of the API role: tokens, their check (shared with reads, joins, writes), the curve step. */
export interface Sessions {
  tokens: SessionTokens;
  check: SessionCheck;
  verifier: SignatureVerifier;
}

/** What the session routes use of the app. */
export interface SessionDeps {
  config: { session: SessionConfig; auth: Pick<AuthConfig, 'windowSeconds'> };
  stores: { sessions: SessionStore; auth: AuthStore };
  sessions: Sessions;
  guards: WriteGuards;
}

const SESSION_ERRORS: readonly ErrorCode[] = ['UNAVAILABLE'];
const CREDENTIAL_ERRORS: readonly ErrorCode[] = ['AUTH_INVALID', 'AUTH_EXPIRED', 'AUTH_REPLAYED'];

export const challengeWrite = {
  method: 'post',
  path: '/v1/session/challenge',
  summary: 'A one-time challenge to sign for a session token (503 while SESSION_KEYS is unset)',
  doc: 'sessions',
  body: { component: 'SessionChallengeRequest', schema: challengeBody, limitBytes: DEFAULT_BODY_LIMIT },
  data: 'SessionChallenge',
  errors: SESSION_ERRORS,
} satisfies RouteSpec;

export const exchangeWrite = {
  method: 'post',
  path: '/v1/session',
  summary: 'Exchanges a signed challenge, once, for a session token of the pair side or wallet',
  doc: 'sessions',
  body: { component: 'SessionRequest', schema: exchangeBody, limitBytes: DEFAULT_BODY_LIMIT },
  data: 'Session',
  errors: [...CREDENTIAL_ERRORS, ...SESSION_ERRORS],
} satisfies RouteSpec;

export const revokeWrite = {
  method: 'post',
  path: '/v1/session/revoke',
  summary: 'Ends every session token of a pair side or wallet issued so far, on every pod within a second',
  doc: 'sessions',
  body: { component: 'SessionRevokeRequest', schema: revokeBody, limitBytes: DEFAULT_BODY_LIMIT },
  data: 'SessionRevoked',
  errors: ['AUTH_REQUIRED', ...CREDENTIAL_ERRORS, ...SESSION_ERRORS],
  bearer: 'write',
} satisfies RouteSpec;

/** A refusal of an exchange or a revocation by its credential, naming the field and the word metrics carry. */
class Refused extends AppError {
  constructor(
    code: 'AUTH_INVALID' | 'AUTH_EXPIRED' | 'AUTH_REPLAYED' | 'AUTH_REQUIRED',
    readonly reason: string,
    field?: string,
    detail = 'refused',
  ) {
    super(code, REFUSED[code], field === undefined ? {} : { details: [{ field, message: detail }] });
  }
}

const REFUSED = {
  AUTH_INVALID: 'The session credential is invalid.',
  AUTH_EXPIRED: 'The challenge or the signed message expired.',
  AUTH_REPLAYED: 'This challenge or signed message was already used.',
  AUTH_REQUIRED: 'A revocation needs a session token of this subject or a signature by one of its keys.',
} as const;

function sessionsOn(deps: SessionDeps): void {
  if (!deps.sessions.tokens.enabled)
    throw unavailable('Sessions are off on this relay (SESSION_KEYS is unset).', 3600);
}

/** Checks 1 to 10 of a signature for purpose `session` by the subject's key. */
function verified(deps: SessionDeps, body: Record<string, unknown>, issued: ChallengeFor): Verified {
  const verdict = verifyCredential(
    { purpose: 'session', subject: issued.kind, location: 'body', body },
    deps.sessions.verifier,
    Date.now(),
    deps.config.auth.windowSeconds * 1000,
  );
  if (!verdict.ok) throw new Refused(verdict.code, verdict.reason, verdict.field, verdict.message);
  return verdict;
}

/** Counts and logs an exchange's refusal (never the token, the challenge or the identity). */
async function counted(ctx: RelayContext, kind: string, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (err) {
    if (err instanceof Refused) {
      recordSession(kind, `refused_${err.reason}`);
      ctx.state.log.info('session refused', { kind, reason: err.reason });
    }
    throw err;
  }
}

async function exchange(deps: SessionDeps, ctx: RelayContext): Promise<void> {
  sessionsOn(deps);
  const { tokens } = deps.sessions;
  const body = ctx.request.body as Record<string, unknown>;
  const fields = parseExchange(withoutCredential(body));
  const issued = subjectOf(fields);
  await counted(ctx, issued.kind, async () => {
    const verdict = verified(deps, body, issued);
    if (verdict.nonce !== fields.challenge) {
      throw new Refused('AUTH_INVALID', 'nonce', '/body/message/nonce', 'nonce must be the challenge');
    }
    const consumed = await deps.stores.sessions.exchange(fields.challenge, issued);
    if (consumed === 'used')
      throw new Refused('AUTH_REPLAYED', 'used', '/body/challenge', 'already exchanged');
    const other =
      consumed === 'other' ||
      (consumed === 'absent' && issuedForOther(deps.config.session.keys, fields.challenge, issued));
    if (other)
      throw new Refused(
        'AUTH_INVALID',
        'other',
        '/body/challenge',
        'issued for another subject, kind or side',
      );
    if (consumed === 'absent')
      throw new Refused('AUTH_EXPIRED', 'expired', '/body/challenge', 'expired or never issued');
  });
  const stamps = await deps.stores.sessions.stamps(issued.subject, issued.side);
  const { token, claims } = await tokens.issue({
    sub: issued.subject,
    kind: issued.kind,
    side: issued.side,
    rev: stamps.rev ?? 0,
    pin: stamps.pin,
  });
  recordSession(issued.kind, 'issued');
  ctx.state.log.info('session issued', { kind: issued.kind, kid: deps.config.session.keys[0]!.kid });
  ok(ctx, {
    token,
    tokenType: 'Bearer',
    expiresAt: new Date(claims.exp * 1000).toISOString(),
    expiresIn: claims.exp - claims.iat,
    ...(issued.kind === 'pair' ? { wkIdentity: issued.subject } : { walletIdentity: issued.subject }),
    side: issued.side,
  });
}

/**
 * The revocation's credential: a token of the subject (a pair's, of either side), or a signature for `session` by
 * one of its keys, whose nonce is then spent as any signed write's.
 */
async function mayRevoke(
  deps: SessionDeps,
  ctx: RelayContext,
  body: Record<string, unknown>,
  issued: ChallengeFor,
): Promise<void> {
  const token = bearerToken(ctx.get('authorization') || undefined);
  const signing = SIGNING_FIELDS.some((field) => Object.hasOwn(body, field));
  if (token !== undefined) {
    if (signing)
      throw new Refused(
        'AUTH_INVALID',
        'both',
        '/headers/authorization',
        'a token or the signature fields, not both',
      );
    const sides = issued.kind === 'pair' ? SIDES : [issued.side];
    await deps.sessions.check.check(
      token,
      { kind: issued.kind, sub: issued.subject, sides },
      'revoke',
      'headers',
      ctx.state.log,
    );
    return;
  }
  if (!signing) throw new Refused('AUTH_REQUIRED', 'required');
  const verdict = verified(deps, body, issued);
  const windowMs = deps.config.auth.windowSeconds * 1000;
  const ttlMs = verdict.timestamp + windowMs + 1000 - Date.now();
  const earlier = await deps.stores.auth.spendNonce(issued.subject, verdict.nonce, ttlMs, 'revoke');
  if (earlier !== undefined)
    throw new Refused('AUTH_REPLAYED', 'replayed', '/body/message/nonce', 'this nonce was already used');
}

/** Sessions: a challenge, its exchange for a token, and revocation (docs/api.md#sessions). */
export const sessionRoutes: MountedRoute<SessionDeps>[] = [
  {
    spec: challengeWrite,
    handling: (deps) => ({
      charge: deps.guards.writeBudget,
      handler: async (ctx) => {
        sessionsOn(deps);
        const issued = subjectOf(parseChallenge(ctx.request.body));
        const seconds = deps.config.session.challengeSeconds;
        const challenge = newChallenge(deps.config.session.keys[0]!, issued);
        await deps.stores.sessions.issue(challenge, issued, seconds);
        ok(ctx, { challenge, expiresAt: new Date(Date.now() + seconds * 1000).toISOString() });
      },
    }),
  },
  {
    spec: exchangeWrite,
    handling: (deps) => ({ charge: deps.guards.writeBudget, handler: (ctx) => exchange(deps, ctx) }),
  },
  {
    spec: revokeWrite,
    handling: (deps) => ({
      charge: deps.guards.writeBudget,
      handler: async (ctx) => {
        sessionsOn(deps);
        const body = ctx.request.body as Record<string, unknown>;
        const issued = subjectOf(parseRevoke(withoutCredential(body)));
        await mayRevoke(deps, ctx, body, issued).catch((err: unknown) => {
          if (err instanceof Refused)
            ctx.state.log.info('session revocation refused', { reason: err.reason });
          throw err;
        });
        const { ttlSeconds, skewSeconds } = deps.config.session;
        const stamp = await deps.stores.sessions.revoke(
          issued.subject,
          issued.side,
          (ttlSeconds + skewSeconds) * 1000,
        );
        deps.sessions.check.forget(issued.subject, issued.side);
        recordRevocation();
        ctx.state.log.info('session revoked', { kind: issued.kind });
        ok(ctx, { revokedAt: new Date(stamp).toISOString() });
      },
    }),
  },
];
