import type { Middleware } from 'koa';
import type { AuthGate } from '../auth/gate.js';
import type { AuthRoute } from '../config.js';
import type { RelayState } from './context.js';

/**
 * Between the body reader and validation: the signed hash covers the body as parsed, before the schema drops or
 * coerces anything, and the credential fields leave the body here, so nothing later can store, echo or log them.
 */
export function signedBody(gate: AuthGate, route: AuthRoute): Middleware<RelayState> {
  return async (ctx, next) => {
    ctx.request.body = await gate.admit({
      route,
      location: 'body',
      body: ctx.request.body as Record<string, unknown>,
      log: ctx.state.log,
    });
    await next();
  };
}
