import type { Middleware } from 'koa';
import type { RelayState } from './context.js';

/** The route template is the matched route with its parameters left out, so identities stay out of logs too. */
export function routeTemplate(ctx: object): string {
  const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  return typeof matched === 'string' ? matched : 'unmatched';
}

/** One line per request: method, route template, status, duration. Never bodies, payloads or tokens. */
export function accessLog(): Middleware<RelayState> {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      ctx.state.log.info('request', {
        method: ctx.method,
        route: routeTemplate(ctx),
        status: ctx.status,
        ms: Math.round(ms * 10) / 10,
        ip: ctx.ip,
      });
    }
  };
}
