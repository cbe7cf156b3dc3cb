import type { RouterMiddleware } from '@koa/router';
import type { SignedRoute } from '../core/signed-routes.js';
import type { AuthGate } from './gate.js';
import { okJson, type RelayState } from '../core/http/context.js';
import { AppError } from '../core/errors.js';
import type { StoredAnswer } from '../core/feature.js';
import { bearerToken } from './session/check.js';

/** Redis answered the command with an error: it refused it, so nothing of it was applied. */
function isRefusedByRedis(err: unknown): boolean {
  return err instanceof Error && err.name === 'ReplyError';
}

/**
 * Between the body reader and validation: the signed hash covers the body as parsed, before the schema drops or
 * coerces anything, and the credential fields leave the body here, so nothing later can store, echo or log them.
 * A request that ends before its route started writing (or whose write Redis refused) gives its nonce back, so the client's retry works once;
 * a byte-identical resend of a verified write is answered with what that write stored, and writes nothing.
 */
export function signedBody(
  gate: AuthGate,
  route: SignedRoute,
  stored: StoredAnswer,
): RouterMiddleware<RelayState> {
  return async (ctx, next) => {
    // An ack's body names no pair: its path does.
    const identity = route === 'ack' ? ctx.params.wkIdentity : undefined;
    const admitted = await gate.admit({
      route,
      location: 'body',
      body: ctx.request.body as Record<string, unknown>,
      ...(identity === undefined ? {} : { identity }),
      token: bearerToken(ctx.get('authorization') || undefined),
      log: ctx.state.log,
    });
    ctx.request.body = admitted.body;
    if (admitted.resendOf !== undefined) {
      const answer = await stored(admitted.body, admitted.resendOf, ctx.params);
      if (answer === null) {
        throw new AppError('AUTH_REPLAYED', 'This signed message was already used.', {
          details: [{ field: '/body/message/nonce', message: 'its write was since replaced or expired' }],
        });
      }
      okJson(ctx, answer);
      return;
    }
    ctx.state.writeId = admitted.writeId;
    ctx.state.tokenSide = admitted.tokenSide;
    try {
      await next();
    } catch (err) {
      if (!ctx.state.writing || isRefusedByRedis(err)) await admitted.release();
      throw err;
    }
  };
}
