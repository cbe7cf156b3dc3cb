import cors from '@koa/cors';
import type { Middleware } from 'koa';

const EXPOSED = [
  'X-Request-Id',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'Retry-After',
  'ETag',
];

/**
 * Any origin by default (the wallet runs as a browser extension), or the configured allow-list. A request
 * without `Origin` is not a browser's cross-origin request and no CORS header applies to it (the apps' native
 * HTTP, probes): it only gets `Vary: Origin`, so a cache keeps it apart from the browsers' answers, and skips
 * the policy's per-request work (a measurable share of a poll, see docs/benchmarks.md).
 */
export function corsPolicy(origins: '*' | string[]): Middleware {
  const policy = cors({
    origin: origins === '*' ? '*' : (ctx) => (origins.includes(ctx.get('Origin')) ? ctx.get('Origin') : ''),
    allowMethods: ['GET', 'HEAD', 'POST', 'OPTIONS'],
    // sspwkid: the wallet app sends the pair's identity in it; informational, never read or logged.
    allowHeaders: ['Content-Type', 'X-Request-Id', 'sspwkid', 'Authorization', 'If-None-Match'],
    exposeHeaders: EXPOSED,
    maxAge: 600,
  });
  return (ctx, next) => {
    if (ctx.get('Origin') !== '') return policy(ctx, next);
    ctx.vary('Origin');
    return next();
  };
}
