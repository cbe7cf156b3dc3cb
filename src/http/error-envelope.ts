import type { Middleware } from 'koa';
import { isRedisUnavailable } from '../redis/clients.js';
import { errorFields } from '../log.js';
import { recordRedisUnavailable } from '../metrics.js';
import type { RelayContext, RelayState } from './context.js';
import { AppError, unavailable } from './errors.js';

interface HttpishError {
  status?: number;
  type?: string;
}

/** Maps whatever was thrown to the one AppError type; anything unexpected is a bug (500) and is logged. */
function toAppError(err: unknown, ctx: RelayContext): AppError {
  if (err instanceof AppError) return err;
  if (isRedisUnavailable(err)) {
    ctx.state.log.warn('redis unavailable', errorFields(err));
    recordRedisUnavailable();
    return unavailable('The relay cannot reach its data store; retry shortly.', 1, err);
  }
  const { type, status } = (err ?? {}) as HttpishError;
  switch (type) {
    case 'entity.parse.failed':
      return new AppError('INVALID_JSON', 'The request body is not valid JSON.');
    case 'entity.too.large':
      return new AppError('PAYLOAD_TOO_LARGE', 'The request body is larger than this endpoint accepts.');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be UTF-8 encoded JSON.');
    case 'request.aborted':
    case 'request.size.invalid':
      return new AppError('INVALID_JSON', 'The request body was incomplete.');
  }
  // co-body rejects unparseable JSON and `__proto__` keys with a SyntaxError carrying status 400.
  if (err instanceof SyntaxError && status === 400) {
    return new AppError('INVALID_JSON', 'The request body is not valid JSON.');
  }
  if (err instanceof URIError) return new AppError('INVALID_PARAMETER', 'The request path is malformed.');
  ctx.state.log.error('unhandled error', { ...errorFields(err), stack: (err as Error)?.stack });
  return new AppError('INTERNAL', 'Something went wrong on our side; it has been logged.');
}

/** The SPEC §1 error envelope for every failure, including unknown routes (404). */
export function errorEnvelope(): Middleware<RelayState> {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.body === undefined) {
        // The router answers a known path with a wrong method by a bare 405/501 plus an Allow header.
        if (ctx.status === 405 || ctx.status === 501) {
          throw new AppError('METHOD_NOT_ALLOWED', 'This endpoint does not accept that method.');
        }
        if (ctx.status === 404) throw new AppError('NOT_FOUND', 'There is no such endpoint.');
      }
    } catch (thrown) {
      const err = toAppError(thrown, ctx);
      ctx.status = err.status;
      ctx.set(err.headers);
      ctx.body = {
        success: false,
        error: {
          code: err.code,
          message: err.message,
          ...(err.details ? { details: err.details } : {}),
          requestId: ctx.state.requestId,
        },
      };
    }
  };
}
