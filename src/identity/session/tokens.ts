import { randomBytes, webcrypto } from 'node:crypto';
import { errors, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import type { Side } from '../../core/sides.js';
import type { SessionConfig, SessionKey } from '../variables.js';

/** Whose token it is: a pair (its wkIdentity) or a wallet alone (its walletIdentity, to read the pairing record). */
export type SubjectKind = 'pair' | 'wallet';

/** The claims of a session token (docs/api.md#sessions), as the relay writes them. */
export interface SessionClaims {
  sub: string;
  aud: string;
  iat: number;
  exp: number;
  jti: string;
  kind: SubjectKind;
  side: Side;
  /** The subject side's revocation stamp at issue, 0 if none. */
  rev: number;
  /** The side's pin stamp at issue, 0 if it was not pinned. */
  pin: number;
}

/** What a token is issued for. */
export type Grant = Pick<SessionClaims, 'sub' | 'kind' | 'side' | 'rev' | 'pin'>;

/** A token that failed: the code it is answered with, and the word metrics and logs carry. */
export interface TokenRefusal {
  ok: false;
  code: 'AUTH_INVALID' | 'AUTH_EXPIRED';
  reason: string;
  /** The header's key id, when it names one of the relay's keys. */
  kid?: string;
}

export interface TokenAccepted {
  ok: true;
  claims: SessionClaims;
  kid: string;
}

/** A compact JWS: three base64url parts, the signature not empty. */
const COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+$/;
export const MAX_TOKEN_CHARS = 1024;
const JTI = /^[A-Za-z0-9_-]{22}$/;
const CLAIMS = ['sub', 'aud', 'iat', 'exp', 'jti', 'kind', 'side', 'rev', 'pin'];

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/** Whether `payload` has every claim with the type the relay writes. */
function wellTyped(payload: JWTPayload): payload is JWTPayload & SessionClaims {
  const claims = payload as Record<string, unknown>;
  return (
    typeof claims.sub === 'string' &&
    typeof claims.aud === 'string' &&
    isCount(claims.iat) &&
    isCount(claims.exp) &&
    typeof claims.jti === 'string' &&
    JTI.test(claims.jti) &&
    (claims.kind === 'pair' || claims.kind === 'wallet') &&
    (claims.side === 'key' || claims.side === 'wallet') &&
    isCount(claims.rev) &&
    isCount(claims.pin)
  );
}

class UnknownKid extends Error {}

/**
 * Tokens that passed every check of `verify`, by their exact text: an app sends the same token for its whole
 * lifetime, and the HMAC through WebCrypto costs ten times the rest of a check. Only expiry can change for a
 * remembered token (its keys are the process's); bounded, oldest out first.
 */
const VERIFIED_KEPT = 10_000;

/**
 * Issues and checks session tokens: JWTs signed HS256 (docs/api.md#sessions) by the `jose` library. The first key
 * of SESSION_KEYS signs, every listed key verifies; times are the relay's clock, with SESSION_CLOCK_SKEW_SECONDS
 * of leeway between pods.
 */
export class SessionTokens {
  private readonly keys: Map<string, Promise<webcrypto.CryptoKey>>;
  private readonly verified = new Map<string, TokenAccepted>();

  constructor(
    private readonly settings: Pick<SessionConfig, 'keys' | 'audience' | 'ttlSeconds' | 'skewSeconds'>,
    private readonly now: () => number = Date.now,
  ) {
    this.keys = new Map(settings.keys.map((key) => [key.kid, importKey(key)]));
  }

  /** Whether SESSION_KEYS is set: without it no token is issued. */
  get enabled(): boolean {
    return this.settings.keys.length > 0;
  }

  /** A token for `grant`, signed by the first key; `exp` is `iat` + SESSION_TTL_SECONDS. */
  async issue(grant: Grant): Promise<{ token: string; claims: SessionClaims }> {
    const signer = this.settings.keys[0]!;
    const iat = Math.floor(this.now() / 1000);
    const claims: SessionClaims = {
      sub: grant.sub,
      aud: this.settings.audience,
      iat,
      exp: iat + this.settings.ttlSeconds,
      jti: randomBytes(16).toString('base64url'),
      kind: grant.kind,
      side: grant.side,
      rev: grant.rev,
      pin: grant.pin,
    };
    const token = await new SignJWT({ ...claims })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: signer.kid })
      .sign(await this.keys.get(signer.kid)!);
    return { token, claims };
  }

  /**
   * Checks, in order: shape (at most 1,024 characters, HS256, claims of their types), key id and signature,
   * audience, issue and expiry times. Binding and revocation are the caller's.
   */
  async verify(token: string): Promise<TokenAccepted | TokenRefusal> {
    if (token.length > MAX_TOKEN_CHARS) return invalid('shape');
    const skew = this.settings.skewSeconds;
    const nowSeconds = this.now() / 1000;
    const known = this.verified.get(token);
    if (known !== undefined) {
      // As jose decides expiry: `exp` at or before now less the leeway.
      if (known.claims.exp > nowSeconds - skew) return known;
      this.verified.delete(token);
      return { ok: false, code: 'AUTH_EXPIRED', reason: 'expired', kid: known.kid };
    }
    if (!COMPACT.test(token)) return invalid('shape');
    let kid: string | undefined;
    try {
      const { payload } = await jwtVerify(
        token,
        async (header) => {
          const key = typeof header.kid === 'string' ? this.keys.get(header.kid) : undefined;
          if (key === undefined) throw new UnknownKid();
          kid = header.kid;
          return key;
        },
        {
          algorithms: ['HS256'],
          audience: this.settings.audience,
          clockTolerance: skew,
          currentDate: new Date(this.now()),
          requiredClaims: CLAIMS,
        },
      );
      if (!wellTyped(payload)) return invalid('claims', kid);
      if (payload.iat > nowSeconds + skew) return invalid('issued', kid);
      const accepted: TokenAccepted = { ok: true, claims: payload, kid: kid! };
      if (this.verified.size >= VERIFIED_KEPT) this.verified.delete(this.verified.keys().next().value!);
      this.verified.set(token, accepted);
      return accepted;
    } catch (err) {
      return refusalOf(err, kid, nowSeconds + skew);
    }
  }
}

function invalid(reason: string, kid?: string): TokenRefusal {
  return { ok: false, code: 'AUTH_INVALID', reason, ...(kid === undefined ? {} : { kid }) };
}

/** What jose's refusal means, in the order of the checks: an expired token must first be well formed. */
function refusalOf(err: unknown, kid: string | undefined, latestIssue: number): TokenRefusal {
  if (err instanceof UnknownKid) return invalid('kid');
  if (err instanceof errors.JOSEAlgNotAllowed) return invalid('alg');
  if (err instanceof errors.JWSSignatureVerificationFailed) return invalid('signature', kid);
  if (err instanceof errors.JWTExpired) {
    if (!wellTyped(err.payload)) return invalid('claims', kid);
    if (err.payload.iat > latestIssue) return invalid('issued', kid);
    return { ok: false, code: 'AUTH_EXPIRED', reason: 'expired', ...(kid === undefined ? {} : { kid }) };
  }
  if (err instanceof errors.JWTClaimValidationFailed) {
    return invalid(err.claim === 'aud' ? 'audience' : 'claims', kid);
  }
  if (err instanceof errors.JOSEError) return invalid('shape', kid);
  throw err;
}

/** Imported once: an HMAC key ready for WebCrypto, which jose signs and verifies with. */
function importKey(key: SessionKey): Promise<webcrypto.CryptoKey> {
  return webcrypto.subtle.importKey('raw', key.secret, { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
    'verify',
  ]);
}
