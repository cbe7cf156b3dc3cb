import type { ParameterizedContext } from 'koa';
import { Cluster } from 'ioredis';
import {
  RateLimiterRes,
  type RateLimiterAbstract,
  type RateLimiterMemory,
  type RateLimiterRedis,
} from 'rate-limiter-flexible';
import { recordRateLimited } from '../metrics.js';
import { isRedisUnavailable, type RedisClient } from '../redis/clients.js';
import { ipBucket } from '../http/client-ip.js';
import { AppError } from '../errors.js';

/** What the limits read of a request: its client address, and the headers they set on the answer. */
type LimitedContext = Pick<ParameterizedContext, 'ip' | 'set'>;

/** sharedLimiter names its keys `<prefix>rl:<name>`: that name labels the rejection counter. */
function limiterName(limiter: RateLimiterAbstract): string {
  return limiter.keyPrefix.slice(limiter.keyPrefix.lastIndexOf(':') + 1);
}

/**
 * What a limited script answers: the limiter's count and time to reset, and the work's result unless refused. A
 * limited script includes lua/includes/consume-global-limit.lua, which consumes the limit on KEYS[1] with ARGV[1]
 * and ARGV[2]; the request's own keys start at KEYS[2], its arguments at ARGV[3].
 */
export type LimitedReply<R> = [consumed: number, ttlMs: number, result?: R];

/** A request's own Redis work, ready to run after the global limit (see GlobalLimit.runWithinLimit). */
export interface LimitedWork<R> {
  redis: RedisClient;
  /** The work as a limited script; the limiter's key and arguments are put in front of `keys` and `args`. */
  script: (keys: string[], args: (string | number)[]) => Promise<LimitedReply<R>>;
  keys: string[];
  args: (string | number)[];
  /** The same work without the limit: what runs on a Cluster, after the limit's own round trip. */
  unlimited: () => Promise<R>;
}

/**
 * The global per-IP limit on /v1 (RATE_LIMIT_POINTS per RATE_LIMIT_WINDOW_SECONDS), shared by every pod
 * through Redis, with rate-limiter-flexible's in-memory insurance while Redis is away. Every answer carries the
 * draft-06 RateLimit-* headers; a refusal is 429 with Retry-After. Koa's `ctx.ip` honours TRUST_PROXY_HOPS
 * (app.proxy + app.maxIpsCount), so a client cannot choose its own key; `ipBucket` counts an IPv6 /64 as one.
 */
export class GlobalLimit {
  constructor(
    private readonly limiter: RateLimiterRedis,
    /** The same limiter's insurance: what the in-script path falls back on when its script cannot run. */
    private readonly inMemory: RateLimiterMemory,
    private readonly points: number,
    private readonly windowSeconds: number,
  ) {}

  /** One point for the client, in its own round trip (the library's script, or memory while Redis is away). */
  async consume(ctx: LimitedContext): Promise<void> {
    let res: RateLimiterRes;
    try {
      res = await this.limiter.consume(ipBucket(ctx.ip));
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      res = rejection;
    }
    this.setHeadersOrRefuse(ctx, res.consumedPoints, res.msBeforeNext);
  }

  /**
   * Runs `script` (a limited script) with the client's limiter key before `keys` and the limit before `args`:
   * one round trip for the limit and the request's work. On a Cluster the limiter key and the record key hash
   * to different slots and no script may touch both, so there the limit is consumed first and `unlimited` does
   * the work afterwards (two round trips). While Redis is away the in-memory insurance still decides between 429
   * and the store's error (503).
   */
  async runWithinLimit<R>(ctx: LimitedContext, work: LimitedWork<R>): Promise<R> {
    const { redis, script, keys, args, unlimited } = work;
    if (redis instanceof Cluster) {
      await this.consume(ctx);
      return unlimited();
    }
    let reply: LimitedReply<R>;
    try {
      reply = await script(
        [this.limiter.getKey(ipBucket(ctx.ip)), ...keys],
        [this.points, this.windowSeconds, ...args],
      );
    } catch (err) {
      if (!isRedisUnavailable(err)) throw err;
      await this.consumeInMemory(ctx);
      throw err;
    }
    const [consumed, ttlMs, result] = reply;
    this.setHeadersOrRefuse(ctx, consumed, ttlMs);
    return result ?? (null as R);
  }

  private async consumeInMemory(ctx: LimitedContext): Promise<void> {
    const res: RateLimiterRes = await this.inMemory.consume(ipBucket(ctx.ip)).catch((rejection: unknown) => {
      if (rejection instanceof RateLimiterRes) return rejection;
      throw rejection;
    });
    this.setHeadersOrRefuse(ctx, res.consumedPoints, res.msBeforeNext);
  }

  private setHeadersOrRefuse(ctx: LimitedContext, consumed: number, msBeforeNext: number): void {
    const resetSeconds = Math.max(0, Math.ceil(msBeforeNext / 1000));
    ctx.set('RateLimit-Limit', String(this.points));
    ctx.set('RateLimit-Remaining', String(Math.max(0, this.points - consumed)));
    ctx.set('RateLimit-Reset', String(resetSeconds));
    if (consumed <= this.points) return;
    recordRateLimited('api');
    throw new AppError('RATE_LIMITED', 'Too many requests; slow down and retry later.', {
      headers: { 'Retry-After': String(Math.max(1, resetSeconds)) },
    });
  }
}

/** The global limit as a route gets it: consumed at most once, by the route's script or on its own. */
export class RequestLimit {
  private consumed = false;

  constructor(
    private readonly global: GlobalLimit,
    private readonly ctx: LimitedContext,
  ) {}

  get spent(): boolean {
    return this.consumed;
  }

  consume(): Promise<void> {
    this.consumed = true;
    return this.global.consume(this.ctx);
  }

  /** See GlobalLimit.runWithinLimit. */
  runWithinLimit<R>(work: LimitedWork<R>): Promise<R> {
    this.consumed = true;
    return this.global.runWithinLimit(this.ctx, work);
  }
}

/** A store's read within the request's limit when the middleware left the consume to the route, else unlimited. */
export function readWithin<R>(limit: RequestLimit | undefined, work: LimitedWork<R>): Promise<R> {
  return limit ? limit.runWithinLimit(work) : work.unlimited();
}

/**
 * Consumes `points` of a per-endpoint budget (per client IP unless `key` says otherwise): the limiter's refusal
 * when over it, nothing within it. For a caller that goes on without the limited part; see consumeOrReject.
 */
export async function consumeWithin(
  limiter: RateLimiterAbstract,
  key: string | { ip: string },
  points = 1,
): Promise<RateLimiterRes | undefined> {
  try {
    await limiter.consume(typeof key === 'string' ? key : ipBucket(key.ip), points);
    return undefined;
  } catch (rejection) {
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    return rejection;
  }
}

/**
 * A consumption that does not set the global headers: for per-endpoint budgets (submissions, signing, bytes
 * written, per client IP unless `key` says otherwise), `points` at a time. `what` completes "Too many …".
 */
export async function consumeOrReject(
  limiter: RateLimiterAbstract,
  key: string | { ip: string },
  what: string,
  points = 1,
): Promise<void> {
  const rejection = await consumeWithin(limiter, key, points);
  if (rejection !== undefined) throw rateLimited(limiter, what, rejection);
}

/** The 429 of a per-endpoint budget's refusal (counted by limiter), with its Retry-After. */
export function rateLimited(limiter: RateLimiterAbstract, what: string, rejection: RateLimiterRes): AppError {
  recordRateLimited(limiterName(limiter));
  return new AppError('RATE_LIMITED', `Too many ${what}; retry later.`, {
    headers: { 'Retry-After': String(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000))) },
  });
}
