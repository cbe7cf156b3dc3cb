import got, { HTTPError, RequestError } from 'got';
import type { DeliveryContext } from './types.js';
import { HelpdeskError } from './types.js';

const MAX_RETRY_AFTER_MS = 3_600_000;

/** `Retry-After` as delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const ms = /^\d+$/.test(header.trim()) ? Number(header.trim()) * 1000 : Date.parse(header) - now;
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS) : undefined;
}

function classify(err: unknown): unknown {
  if (err instanceof HTTPError) {
    const status = err.response.statusCode;
    const what = `helpdesk answered ${status}`;
    if (status === 429) {
      return new HelpdeskError('rateLimited', what, retryAfterMs(err.response.headers['retry-after']));
    }
    // 408 is the server asking for the same request again, like a 5xx.
    if (status >= 500 || status === 408) return new HelpdeskError('transient', what);
    return new HelpdeskError('permanent', what);
  }
  if (err instanceof RequestError)
    return new HelpdeskError('transient', `helpdesk unreachable (${err.code})`);
  return err;
}

/**
 * One POST of a JSON body (already serialized, so a signature covers the exact bytes) with an overall timeout
 * and no retries of its own: BullMQ schedules the retries. Redirects are not followed (a redirected POST
 * would not create the ticket). Resolves with the parsed answer, or undefined when it is not JSON.
 */
export async function postJson(
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
  context: DeliveryContext,
): Promise<unknown> {
  try {
    const res = await got.post(url, {
      body,
      headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
      timeout: { request: timeoutMs },
      retry: { limit: 0 },
      followRedirect: false,
      signal: context.signal,
    });
    try {
      return JSON.parse(res.body) as unknown;
    } catch {
      return undefined;
    }
  } catch (err) {
    throw classify(err);
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
