import type { Middleware } from 'koa';
import type { AuthGate } from '../auth/gate.js';
import type { AuthRoute } from '../config.js';
import type { RelayState } from './context.js';
import { AppError } from './errors.js';

/**
 * Between the body reader and validation: the signed hash covers the body as parsed, before the schema drops or
 * coerces anything, and the credential fields leave the body here, so nothing later can store, echo or log them.
 * A request the relay then fails (5xx: Redis, a bug) gives its nonce back, so the client's retry works once.
 */
export function signedBody(gate: AuthGate, route: AuthRoute): Middleware<RelayState> {
  return async (ctx, next) => {
    const admitted = await gate.admit({
      route,
      location: 'body',
      body: ctx.request.body as Record<string, unknown>,
      log: ctx.state.log,
    });
    ctx.request.body = admitted.body;
    try {
      await next();
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) await admitted.release();
      throw err;
    }
  };
}
