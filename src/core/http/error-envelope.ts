import { isRedisUnavailable } from '../redis/clients.js';
import { errorFields } from '../log.js';
import { recordRedisUnavailable } from '../metrics.js';
import type { RelayContext } from './context.js';
import { AppError, unavailable } from '../errors.js';

/** Maps whatever was thrown to the one AppError type; anything unexpected is a bug (500) and is logged. */
function toAppError(err: unknown, ctx: RelayContext): AppError {
  if (err instanceof AppError) return err;
  if (isRedisUnavailable(err)) {
    ctx.state.log.warn('redis unavailable', errorFields(err));
    recordRedisUnavailable();
    return unavailable('The relay cannot reach its data store; retry shortly.', 1, err);
  }
  if (err instanceof URIError) return new AppError('INVALID_PARAMETER', 'The request path is malformed.');
  ctx.state.log.error('unhandled error', { ...errorFields(err), stack: (err as Error)?.stack });
  return new AppError('INTERNAL', 'Something went wrong on our side; it has been logged.');
}

/** Answers whatever a request's handling threw in the error envelope (docs/api.md#envelope-and-errors). */
export function answerError(ctx: RelayContext, thrown: unknown): void {
  const err = toAppError(thrown, ctx);
  ctx.status = err.status;
  ctx.set(err.headers);
  ctx.body = envelope(err, ctx.state.requestId);
}

/** The error body; also written by the server for requests that never reach Koa (see client-errors). */
export function envelope(err: AppError, requestId: string): object {
  return {
    success: false,
    error: {
      code: err.code,
      message: err.message,
      ...(err.details ? { details: err.details } : {}),
      requestId,
    },
  };
}
