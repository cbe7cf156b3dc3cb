import type { Middleware } from 'koa';
import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { recordRateLimited } from '../metrics.js';
import type { RelayState } from './context.js';
import { ipBucket } from './client-ip.js';
import { AppError } from './errors.js';

/** sharedLimiter names its keys `<prefix>rl:<name>`: that name labels the rejection counter. */
function limiterName(limiter: RateLimiterAbstract): string {
  return limiter.keyPrefix.slice(limiter.keyPrefix.lastIndexOf(':') + 1);
}

function setHeaders(ctx: Parameters<Middleware>[0], points: number, res: RateLimiterRes): void {
  ctx.set('RateLimit-Limit', String(points));
  ctx.set('RateLimit-Remaining', String(Math.max(0, res.remainingPoints)));
  ctx.set('RateLimit-Reset', String(Math.max(0, Math.ceil(res.msBeforeNext / 1000))));
}

/**
 * Consumes one point of `limiter` for the client IP and sets the draft-06 RateLimit-* headers. Koa's `ctx.ip`
 * honours TRUST_PROXY_HOPS (app.proxy + app.maxIpsCount), so a client cannot choose its own key.
 */
export function rateLimit(
  limiter: RateLimiterAbstract,
  points: number,
  applies: (path: string) => boolean,
): Middleware<RelayState> {
  return async (ctx, next) => {
    if (!applies(ctx.path)) return next();
    let res: RateLimiterRes;
    try {
      res = await limiter.consume(ipBucket(ctx.ip));
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      recordRateLimited(limiterName(limiter));
      setHeaders(ctx, points, rejection);
      const retryAfter = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      throw new AppError('RATE_LIMITED', 'Too many requests; slow down and retry later.', {
        headers: { 'Retry-After': String(retryAfter) },
      });
    }
    setHeaders(ctx, points, res);
    await next();
  };
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
  try {
    await limiter.consume(typeof key === 'string' ? key : ipBucket(key.ip), points);
  } catch (rejection) {
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    recordRateLimited(limiterName(limiter));
    throw new AppError('RATE_LIMITED', `Too many ${what}; retry later.`, {
      headers: { 'Retry-After': String(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000))) },
    });
  }
}

/**
 * Charges a write's decoded body size to the client IP's byte budget (limiter points are bytes), after
 * jsonBody read it. Only the write routes use it, so reads cost no extra Redis round trip.
 */
export function writeBudget(limiter: RateLimiterAbstract): Middleware<RelayState> {
  return async (ctx, next) => {
    await consumeOrReject(limiter, ctx, 'bytes written from this address', ctx.state.bodyBytes ?? 0);
    await next();
  };
}
