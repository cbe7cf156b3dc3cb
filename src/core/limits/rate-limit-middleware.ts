import type { Middleware } from 'koa';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { BodyCharge } from '../http/body.js';
import type { RelayContext, RelayState } from '../http/context.js';
import { consumeOrReject, RequestLimit, type GlobalLimit } from './rate-limit.js';

/**
 * Applies the global limit to the paths `applies` names. Requests `consumesInScript` names (the record reads) leave the
 * consume to their route, which does it inside its own Redis script (`ctx.state.limit`); should such a request
 * end without spending it (a bad parameter), it is consumed then, and a spent budget still answers 429.
 */
export function rateLimit(
  limit: GlobalLimit,
  applies: (path: string) => boolean,
  consumesInScript: (ctx: RelayContext) => boolean,
): Middleware<RelayState> {
  return async (ctx, next) => {
    if (!applies(ctx.path)) return next();
    if (!consumesInScript(ctx)) {
      await limit.consume(ctx);
      return next();
    }
    const pending = new RequestLimit(limit, ctx);
    ctx.state.limit = pending;
    try {
      await next();
    } catch (err) {
      if (!pending.spent) await pending.consume();
      throw err;
    }
    if (!pending.spent) await pending.consume();
  };
}

/**
 * Charges a write's decoded body size to the client IP's byte budget (limiter points are bytes), as jsonBody
 * reads it: every body read, refused or not. Only the write routes use it, so reads cost no extra Redis round
 * trip.
 */
export function writeBudget(limiter: RateLimiterAbstract): BodyCharge {
  return (ctx, bytes) => consumeOrReject(limiter, ctx, 'bytes written from this address', bytes);
}
