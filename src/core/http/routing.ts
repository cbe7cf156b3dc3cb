import Router from '@koa/router';
import type { Middleware } from 'koa';
import type { RelayState } from './context.js';
import { AppError } from '../errors.js';
import type { RouteSpec } from './route-spec.js';

/**
 * The one answer to "is this an API path" (rate limited, RateLimit-* headers). It is exact about case because
 * the router is too: a path that fails this test can only reach the unlimited health routes or a 404.
 */
export function isV1(path: string): boolean {
  return path === '/v1' || path.startsWith('/v1/');
}

/**
 * Whether a request goes to one of the record reads of `routes` that consume the global rate limit inside their
 * own Redis script (one round trip per poll instead of two); HEAD is answered by the GET route. A path
 * parameter matches as the router's does: one or more characters other than `/`.
 */
export function consumesLimitInScript(
  routes: readonly RouteSpec<string>[],
): (ctx: { method: string; path: string }) => boolean {
  const paths = routes
    .filter((route) => route.method === 'get' && route.consumesLimitInScript === true)
    .map((route) => route.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+'));
  const reads = new RegExp(`^(?:${paths.join('|')})$`);
  return (ctx) => (ctx.method === 'GET' || ctx.method === 'HEAD') && reads.test(ctx.path);
}

/** Case-sensitive and strict about trailing slashes, so each resource has exactly one spelling. */
export function createRouter(): Router<RelayState> {
  return new Router<RelayState>({ sensitive: true, strict: true });
}

/**
 * After the routes: a known path with another method is 405 with `Allow`, anything else unanswered is 404 —
 * whatever the method (the router's own allowedMethods answers 501 to methods it does not implement, even on
 * paths it does not know).
 */
export function unmatched(router: Router<RelayState>): Middleware<RelayState> {
  return async (ctx, next) => {
    await next();
    if (ctx.body !== undefined || ctx.status !== 404) return;
    const allowed = [...new Set(router.match(ctx.path, ctx.method).path.flatMap((layer) => layer.methods))];
    if (allowed.length === 0) throw new AppError('NOT_FOUND', 'There is no such endpoint.');
    if (ctx.method === 'OPTIONS') {
      ctx.status = 204;
      ctx.set('Allow', allowed.join(', '));
      return;
    }
    throw new AppError('METHOD_NOT_ALLOWED', 'This endpoint does not accept that method.', {
      headers: { Allow: allowed.join(', ') },
    });
  };
}
