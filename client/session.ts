import { RelayError, SessionEnded, type SessionEndReason } from './errors.js';
import type { Side } from './events.js';

/** The relay's answer to an exchange (docs/api.md#post-v1session). */
export interface SessionGrant {
  token: string;
  tokenType: 'Bearer';
  expiresAt: string;
  /** The token's lifetime in seconds: a client schedules its renewal from this, never from its own clock. */
  expiresIn: number;
  wkIdentity?: string;
  walletIdentity?: string;
  side: Side;
}

export interface SessionOptions {
  /** The pair's or the wallet's address is on a test network (`tb1q…`, `m…`/`n…`). */
  testnet?: boolean;
  /** Renew this many seconds before the token's end (default a quarter of its lifetime; at least 1 s after issue). */
  renewBeforeSeconds?: number;
  /** Called once, when the session ends (the same error every call of it rejects with from then on). */
  onEnded?: (ended: SessionEnded) => void;
}

/** Wait before retrying a renewal that failed for a reason a retry can change, unless the relay says. */
const RENEWAL_RETRY_MS = 5000;

/** A renewal refused for good: the relay answered the exchange itself with a 4xx other than 429. */
const isFinal = (err: unknown) =>
  err instanceof RelayError && err.status >= 400 && err.status < 500 && err.status !== 429;

/** The refusal of a token that was revoked, whose side's pin changed or whose signing key was retired. */
export const endsSession = (err: unknown): err is RelayError =>
  err instanceof RelayError &&
  err.status === 401 &&
  err.code === 'AUTH_EXPIRED' &&
  /session ended/i.test(err.message);

/**
 * A session's token over time: exchanged at start, renewed before its end on a timer counted from the lifetime
 * the relay answered (measured from when the exchange was sent, so never late by the round trip), renewed at
 * once when a call finds it past its end (a timer a suspended device held back), and ended for good when the
 * relay says so or the app closes it.
 */
export class TokenKeeper {
  /** Resolves with the reason, once, when the session ends. */
  readonly ended: Promise<SessionEnded>;
  private grant!: SessionGrant;
  /** performance.now() past which the token is over, by this process's monotonic clock. */
  private overAt = 0;
  private renewal: Promise<void> | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private endedWith: SessionEnded | undefined;
  private resolveEnded!: (ended: SessionEnded) => void;

  private constructor(
    private readonly exchange: () => Promise<SessionGrant>,
    private readonly options: SessionOptions,
  ) {
    this.ended = new Promise((resolve) => (this.resolveEnded = resolve));
  }

  /** A keeper holding its first token; rejects with the exchange's error, and then nothing is scheduled. */
  static async start(exchange: () => Promise<SessionGrant>, options: SessionOptions): Promise<TokenKeeper> {
    const keeper = new TokenKeeper(exchange, options);
    await keeper.exchangeNow();
    return keeper;
  }

  /** The answer of the last exchange. */
  get current(): SessionGrant {
    return this.grant;
  }

  /** The token to send now: renewed first when it is over; rejects with SessionEnded once the session is. */
  async token(): Promise<string> {
    if (this.endedWith) throw this.endedWith;
    if (performance.now() >= this.overAt) await this.renew();
    return this.grant.token;
  }

  /** A new token now (one exchange at a time): a refusal for good ends the session and rejects with SessionEnded. */
  renew(): Promise<void> {
    if (this.endedWith) return Promise.reject(this.endedWith);
    this.renewal ??= this.exchangeNow()
      .catch((err: unknown) => {
        if (this.endedWith) throw this.endedWith;
        if (isFinal(err)) throw this.end('refused', err as RelayError);
        const retryAfter = err instanceof RelayError ? err.retryAfter : undefined;
        this.schedule(retryAfter !== undefined ? retryAfter * 1000 : RENEWAL_RETRY_MS);
        throw err;
      })
      .finally(() => (this.renewal = undefined));
    return this.renewal;
  }

  /** Ends the session once: no more renewals; the error every later call rejects with. */
  end(reason: SessionEndReason, cause?: RelayError): SessionEnded {
    if (this.endedWith) return this.endedWith;
    this.endedWith = new SessionEnded(reason, cause);
    clearTimeout(this.timer);
    this.resolveEnded(this.endedWith);
    this.options.onEnded?.(this.endedWith);
    return this.endedWith;
  }

  private async exchangeNow(): Promise<void> {
    const sent = performance.now();
    const grant = await this.exchange();
    if (this.endedWith) throw this.endedWith;
    this.grant = grant;
    this.overAt = sent + grant.expiresIn * 1000;
    const before = this.options.renewBeforeSeconds ?? grant.expiresIn / 4;
    this.schedule(Math.max(grant.expiresIn - before, 1) * 1000);
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    // A failed renewal has ended the session or scheduled its retry already.
    this.timer = setTimeout(() => {
      this.renew().catch(() => undefined);
    }, ms);
    // The timer alone keeps no process alive (a script that is done exits).
    (this.timer as { unref?: () => void }).unref?.();
  }
}
