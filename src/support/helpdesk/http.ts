import { RequestError } from 'got';
import { outboundHttp, retryAfterMs } from '../../core/outbound-http.js';
import { HelpdeskError, type DeliveryContext } from './types.js';

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
    res = await outboundHttp(timeoutMs, { throwHttpErrors: false }).post(url, {
      body,
      headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
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
