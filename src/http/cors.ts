import cors from '@koa/cors';
import type { Middleware } from 'koa';

const EXPOSED = ['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After'];

/** Any origin by default (the wallet runs as a browser extension), or the configured allow-list. */
export function corsPolicy(origins: '*' | string[]): Middleware {
  return cors({
    origin: origins === '*' ? '*' : (ctx) => (origins.includes(ctx.get('Origin')) ? ctx.get('Origin') : ''),
    allowMethods: ['GET', 'HEAD', 'POST', 'OPTIONS'],
    allowHeaders: ['Content-Type', 'X-Request-Id'],
    exposeHeaders: EXPOSED,
    maxAge: 600,
  });
}
