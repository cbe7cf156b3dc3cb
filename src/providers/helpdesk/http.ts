import got, { RequestError } from 'got';
import { HelpdeskError, type DeliveryContext } from './types.js';

/** A helpdesk's pause is honoured between these bounds: never a busy loop, never a day of silence. */
const MIN_RETRY_AFTER_MS = 1000;
const MAX_RETRY_AFTER_MS = 3_600_000;

/** `Retry-After` as delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const value = header.trim();
  // An HTTP date names its weekday and month; Date.parse alone would also read "-5" as a year.
  const ms = /^\d+$/.test(value)
    ? Number(value) * 1000
    : /[a-z]/i.test(value)
      ? Date.parse(value) - now
      : NaN;
  return Number.isFinite(ms) ? Math.min(Math.max(ms, MIN_RETRY_AFTER_MS), MAX_RETRY_AFTER_MS) : undefined;
}

/** Any answer but a 2xx is a failure; a redirect too (following it would not create the ticket). */
function statusError(status: number, retryAfter: string | undefined): HelpdeskError {
  const what = `helpdesk answered ${status}`;
  if (status === 429) return new HelpdeskError('rateLimited', what, retryAfterMs(retryAfter));
  // 408 is the server asking for the same request again, like a 5xx.
  if (status >= 500 || status === 408) return new HelpdeskError('transient', what);
  return new HelpdeskError('permanent', what);
}

/**
 * One POST of a JSON body (already serialized, so a signature covers the exact bytes) with an overall timeout
 * and no retries of its own: BullMQ schedules the retries. Resolves with the parsed answer, or undefined when it
 * is not JSON.
 */
export async function postJson(
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
  context: DeliveryContext,
): Promise<unknown> {
  let res;
  try {
    res = await got.post(url, {
      body,
      headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
      timeout: { request: timeoutMs },
      retry: { limit: 0 },
      followRedirect: false,
      throwHttpErrors: false,
      signal: context.signal,
    });
  } catch (err) {
    if (err instanceof RequestError)
      throw new HelpdeskError('transient', `helpdesk unreachable (${err.code})`);
    throw err;
  }
  if (res.statusCode < 200 || res.statusCode > 299) {
    throw statusError(res.statusCode, res.headers['retry-after']);
  }
  try {
    return JSON.parse(res.body) as unknown;
  } catch {
    return undefined;
  }
}

/** Basic authorization header value. */
export function basicAuth(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

/** A numeric or string id found at `path` of a helpdesk's answer. */
export function idAt(answer: unknown, ...path: string[]): string | undefined {
  let value: unknown = answer;
  for (const key of path) {
    value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
  }
  return typeof value === 'number' || typeof value === 'string' ? String(value) : undefined;
}
