import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { RequestError, type Got } from 'got';
import type { ServiceAccount } from './service-account.js';
import { isRecord, outboundHttp } from '../../core/outbound-http.js';

const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';
const GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** The longest assertion Google accepts. */
const ASSERTION_SECONDS = 3600;
/** A token is replaced this long before Google says it expires (at most half its life), so none expires in use. */
const REFRESH_EARLY_SECONDS = 300;
/**
 * FCM refusing the access token (401 UNAUTHENTICATED) drops it at most this often: a key that Google revoked or a
 * clock far off would otherwise cost one token request per message.
 */
const FORCED_REFRESH_INTERVAL_MS = 60_000;

/** The access token could not be had; the sends that needed it are retried with the job. */
export class FcmAuthError extends Error {
  override name = 'FcmAuthError';
}

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** An RS256 JWT of the service account (RFC 7523 assertion for Google's OAuth 2.0 token endpoint). */
function serviceAccountJwt(account: ServiceAccount, key: KeyObject, nowSeconds: number): string {
  const header = base64url({ alg: 'RS256', typ: 'JWT' });
  const claims = base64url({
    iss: account.clientEmail,
    scope: FCM_SCOPE,
    aud: account.tokenUri,
    iat: nowSeconds,
    exp: nowSeconds + ASSERTION_SECONDS,
  });
  const signature = sign('sha256', Buffer.from(`${header}.${claims}`), key).toString('base64url');
  return `${header}.${claims}.${signature}`;
}

/**
 * The OAuth 2.0 access token of the service account, cached until shortly before it expires and shared by all
 * of the worker's jobs: concurrent callers wait on one token request.
 */
export class FcmAccessToken {
  private readonly key: KeyObject;
  private readonly http: Got;
  private cached: { token: string; refreshAtMs: number } | undefined;
  private pending: Promise<string> | undefined;
  private lastForcedMs = -Infinity;

  constructor(
    private readonly account: ServiceAccount,
    timeoutMs: number,
  ) {
    this.key = createPrivateKey(account.privateKey);
    this.http = outboundHttp(timeoutMs, { throwHttpErrors: false });
  }

  get(): Promise<string> {
    if (this.cached && Date.now() < this.cached.refreshAtMs) return Promise.resolve(this.cached.token);
    this.pending ??= this.fetch().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  /**
   * FCM refused this access token (401 UNAUTHENTICATED). True when a send may be tried again with another one:
   * another caller already replaced it, or it is dropped now (the next `get` fetches a new one). False while the
   * last forced refresh is under FORCED_REFRESH_INTERVAL_MS old: a new token would most likely be refused too.
   */
  invalidate(token: string, nowMs = Date.now()): boolean {
    if (this.cached === undefined || this.cached.token !== token) return true;
    if (nowMs - this.lastForcedMs < FORCED_REFRESH_INTERVAL_MS) return false;
    this.lastForcedMs = nowMs;
    this.cached = undefined;
    return true;
  }

  private async fetch(): Promise<string> {
    const assertion = serviceAccountJwt(this.account, this.key, Math.floor(Date.now() / 1000));
    let res;
    try {
      res = await this.http.post(this.account.tokenUri, {
        form: { grant_type: GRANT_TYPE, assertion },
        responseType: 'text',
      });
    } catch (err) {
      throw new FcmAuthError(
        `token endpoint unreachable (${err instanceof RequestError ? err.code : 'error'})`,
      );
    }
    let answer: unknown;
    try {
      answer = JSON.parse(res.body);
    } catch {
      answer = undefined;
    }
    if (res.statusCode !== 200) {
      // OAuth errors are codes such as invalid_grant: safe to log, unlike a description that may echo input.
      const code = isRecord(answer) && typeof answer.error === 'string' ? ` ${answer.error}` : '';
      throw new FcmAuthError(`token endpoint answered ${res.statusCode}${code}`);
    }
    if (
      !isRecord(answer) ||
      typeof answer.access_token !== 'string' ||
      typeof answer.expires_in !== 'number'
    ) {
      throw new FcmAuthError('token endpoint answered without access_token and expires_in');
    }
    const early = Math.min(REFRESH_EARLY_SECONDS, answer.expires_in / 2);
    this.cached = {
      token: answer.access_token,
      refreshAtMs: Date.now() + (answer.expires_in - early) * 1000,
    };
    return answer.access_token;
  }
}
