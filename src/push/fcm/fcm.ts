import { RequestError, type Got } from 'got';
import type { PushConfig } from '../variables.js';
import { isRecord, outboundHttp, retryAfterMs } from '../../core/outbound-http.js';
import { FcmAccessToken, FcmAuthError } from './fcm-auth.js';
import type { ServiceAccount } from './service-account.js';
import type { PushNotice, PushResult, PushSender } from './types.js';

/** One constant: a newer push replaces the banner of an older one on the device. */
const COLLAPSE_KEY = 'multisig-relay';
const FCM_ERROR_TYPE = 'type.googleapis.com/google.firebase.fcm.v1.FcmError';
const BAD_REQUEST_TYPE = 'type.googleapis.com/google.rpc.BadRequest';

/**
 * The FCM HTTP v1 message for one token: generic text and the action type only. Push services are third
 * parties: never the payload, the pair's identity, addresses, amounts, xpubs or nonces.
 */
function fcmMessage(token: string, notice: PushNotice, nowMs: number) {
  const ttlSeconds = Math.max(1, Math.floor((notice.expiresAtMs - nowMs) / 1000));
  return {
    message: {
      token,
      notification: { title: notice.title, body: notice.body },
      data: { action: notice.action },
      android: { priority: 'high', ttl: `${ttlSeconds}s`, collapse_key: COLLAPSE_KEY },
      apns: {
        headers: {
          'apns-priority': '10',
          'apns-expiration': String(Math.floor(notice.expiresAtMs / 1000)),
          'apns-collapse-id': COLLAPSE_KEY,
        },
      },
    },
  };
}

interface GoogleError {
  status: string | undefined;
  /** `errorCode` of the FcmError detail. */
  fcmCode: string | undefined;
  /** Fields named by a BadRequest detail. */
  fields: string[];
}

/** Google's error body: `{ error: { code, message, status, details: [{ '@type', errorCode | fieldViolations }] } }`. */
function googleError(text: string): GoogleError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const error = isRecord(body) && isRecord(body.error) ? body.error : {};
  const details = Array.isArray(error.details) ? error.details.filter(isRecord) : [];
  const fcm = details.find((d) => d['@type'] === FCM_ERROR_TYPE);
  const fields = details
    .filter((d) => d['@type'] === BAD_REQUEST_TYPE && Array.isArray(d.fieldViolations))
    .flatMap((d) => (d.fieldViolations as unknown[]).filter(isRecord).map((v) => String(v.field)));
  return {
    status: typeof error.status === 'string' ? error.status : undefined,
    fcmCode: fcm && typeof fcm.errorCode === 'string' ? fcm.errorCode : undefined,
    fields,
  };
}

/**
 * A 401 whose FcmError says THIRD_PARTY_AUTH_ERROR is not about our access token: Apple (or a web-push service)
 * refused the APNs key or certificate configured in the Firebase project. Every iOS token fails the same way
 * until an operator fixes it there, so the reason says so.
 */
export const THIRD_PARTY_AUTH_REASON =
  'FCM 401 THIRD_PARTY_AUTH_ERROR: APNs or web-push credential of the Firebase project refused';

/** What an FCM answer means for its token. */
function fcmResult(status: number, body: string, retryAfter: string | undefined): PushResult {
  if (status >= 200 && status < 300) return { outcome: 'sent' };
  const error = googleError(body);
  const reason = `FCM ${status} ${error.fcmCode ?? error.status ?? ''}`.trim();
  if (status === 401 && error.fcmCode === 'THIRD_PARTY_AUTH_ERROR')
    return { outcome: 'failed', reason: THIRD_PARTY_AUTH_REASON };
  // Any other 401 refuses our access token: a later attempt (with a new one) may pass.
  if (status === 401) return { outcome: 'retry', reason };
  // A 429 is the project's quota: every token of every job would meet it, so the worker pauses the whole queue.
  if (status === 429)
    return { outcome: 'retry', reason, retryAfterMs: retryAfterMs(retryAfter), rateLimited: true };
  if (status >= 500) return { outcome: 'retry', reason, retryAfterMs: retryAfterMs(retryAfter) };
  if (status === 404 && error.fcmCode === 'UNREGISTERED') return { outcome: 'remove', reason };
  if (status === 403 && error.fcmCode === 'SENDER_ID_MISMATCH') return { outcome: 'remove', reason };
  // INVALID_ARGUMENT is about the token when FCM says so in its own detail and names no other field; a bad field
  // of our message would fail for every token and must not cost the pair its tokens.
  const aboutToken =
    error.fcmCode === 'INVALID_ARGUMENT' && error.fields.every((field) => field === 'message.token');
  if (status === 400 && aboutToken) return { outcome: 'remove', reason };
  return { outcome: 'failed', reason };
}

/** FCM HTTP v1: `POST {FCM_API_URL}/v1/projects/{project_id}/messages:send`, one message per token. */
export class FcmSender implements PushSender {
  readonly name = 'fcm';
  private readonly url: string;
  private readonly http: Got;
  private readonly accessToken: FcmAccessToken;

  constructor(account: ServiceAccount, push: PushConfig) {
    this.url = `${push.fcmApiUrl}/v1/projects/${encodeURIComponent(account.projectId)}/messages:send`;
    this.accessToken = new FcmAccessToken(account, push.timeoutMs);
    this.http = outboundHttp(push.timeoutMs, { throwHttpErrors: false });
  }

  async send(token: string, notice: PushNotice, signal?: AbortSignal): Promise<PushResult> {
    // A 401 UNAUTHENTICATED means the cached access token went bad (revoked, clock skew): drop it and try once
    // with a new one, unless it was dropped a moment ago (then the job retries later).
    for (let refreshed = false; ; refreshed = true) {
      let accessToken: string;
      try {
        accessToken = await this.accessToken.get();
      } catch (err) {
        if (err instanceof FcmAuthError) return { outcome: 'retry', reason: err.message };
        throw err;
      }
      let res;
      try {
        res = await this.http.post(this.url, {
          json: fcmMessage(token, notice, Date.now()),
          headers: { authorization: `Bearer ${accessToken}` },
          responseType: 'text',
          signal,
        });
      } catch (err) {
        if (signal?.aborted || !(err instanceof RequestError)) throw err;
        return { outcome: 'retry', reason: `FCM unreachable (${err.code})` };
      }
      const result = fcmResult(res.statusCode, res.body, res.headers['retry-after']);
      if (res.statusCode !== 401 || result.outcome !== 'retry') return result;
      if (!refreshed && this.accessToken.invalidate(accessToken)) continue;
      return { outcome: 'retry', reason: `${result.reason} (access token refused)` };
    }
  }
}
