import type { Middleware } from 'koa';
import { koaBody } from 'koa-body';
import type { RelayState } from './context.js';
import { AppError } from './errors.js';

export const DEFAULT_BODY_LIMIT = 64 * 1024;
export const ACTION_BODY_LIMIT = 2 * 1024 * 1024;
/** Support forms allow 50,000 characters (SPEC §6); in UTF-8 that is up to 200 KB, so 64 KB would refuse them. */
export const SUPPORT_BODY_LIMIT = 256 * 1024;

/**
 * A route's JSON body: 415 unless `application/json`, 413 over `limitBytes` (checked against Content-Length
 * before reading), INVALID_JSON unless the body is one JSON object.
 */
export function jsonBody(limitBytes = DEFAULT_BODY_LIMIT): Middleware<RelayState> {
  const parse = koaBody({
    json: true,
    urlencoded: false,
    text: false,
    multipart: false,
    jsonStrict: true,
    jsonLimit: limitBytes,
    patchNode: false,
  });
  return async (ctx, next) => {
    if (!ctx.is('application/json')) {
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be application/json.');
    }
    await parse(ctx, async () => {});
    const body: unknown = ctx.request.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new AppError('INVALID_JSON', 'The request body must be a JSON object.');
    }
    await next();
  };
}
