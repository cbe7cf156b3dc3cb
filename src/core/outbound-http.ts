import got, {
  HTTPError,
  RequestError,
  type CancelableRequest,
  type ExtendOptions,
  type Got,
  type GotReturn,
  type Options,
} from 'got';

/** Larger answers than this are cut off: no provider answer we use comes near it. */
const MAX_RESPONSE_BYTES = 1024 * 1024;

/** Cancels an answer once it passes MAX_RESPONSE_BYTES (got then rejects with a RequestError, ERR_CANCELED). */
function capResponse<T extends GotReturn>(options: Options, next: (options: Options) => T): T {
  const pending = next(options) as GotReturn;
  if (!options.isStream) {
    const request = pending as CancelableRequest;
    // `on` hands back the same request, which the caller awaits.
    void request.on('downloadProgress', (progress) => {
      if (progress.transferred > MAX_RESPONSE_BYTES) request.cancel('response too large');
    });
  }
  return pending as T;
}

/** The one `got` setup for third parties: bounded time and answer size, no retries or redirects of its own. */
export function outboundHttp(timeoutMs: number, options: ExtendOptions = {}): Got {
  return got.extend(
    { timeout: { request: timeoutMs }, retry: { limit: 0 }, followRedirect: false, handlers: [capResponse] },
    options,
  );
}

/** Any failure of a third party (network, timeout, status, size, shape). Its message never holds their body. */
export class UpstreamError extends Error {
  override name = 'UpstreamError';
}

/** JSON over HTTP to third parties: bounded time and size, no retries (the next refresh or request retries). */
export class Upstream {
  private readonly client: Got;

  constructor(timeoutMs: number) {
    this.client = outboundHttp(timeoutMs, {
      headers: { accept: 'application/json', 'user-agent': 'multisig-relay' },
    });
  }

  getJson(url: string): Promise<unknown> {
    return this.request(url, { method: 'GET' });
  }

  postJson(url: string, body: unknown): Promise<unknown> {
    return this.request(url, { method: 'POST', json: body });
  }

  private async request(url: string, options: { method: 'GET' | 'POST'; json?: unknown }): Promise<unknown> {
    const host = new URL(url).host;
    const pending = this.client(url, { ...options, responseType: 'text' });
    let text: string;
    try {
      text = (await pending).body;
    } catch (err) {
      throw new UpstreamError(
        `${host}: ${pending.isCanceled ? 'answer larger than the limit' : reason(err)}`,
      );
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new UpstreamError(`${host}: answer is not JSON`);
    }
  }
}

/** Status or error code only: got's messages repeat the URL, and URLs may carry API keys. */
function reason(err: unknown): string {
  if (err instanceof HTTPError) return `HTTP ${err.response.statusCode}`;
  if (err instanceof RequestError) return err.code;
  return 'request failed';
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A finite, non-negative number, or an UpstreamError naming `what`. */
export function amount(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new UpstreamError(`${what} is not a non-negative number`);
  }
  return value;
}

/** A third party's pause (helpdesk, FCM) is honoured between these bounds: never a busy loop, never a day of silence. */
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
