import type Router from '@koa/router';
import { jsonBody } from '../http/body.js';
import { ok, type RelayState } from '../http/context.js';
import { validator } from '../http/validate.js';
import { tokenBody } from '../schemas/token.js';
import type { TokenStore } from '../store/token-store.js';
import type { TokenRegistration } from '../types.js';

const parseBody = validator<TokenRegistration>('body', tokenBody);

/** Registers push tokens; the answer holds counts only: tokens are never echoed or readable via the API. */
export function tokenRoutes(router: Router<RelayState>, store: TokenStore): void {
  router.post('/v1/token', jsonBody(), async (ctx) => {
    ok(ctx, await store.save(parseBody(ctx.request.body)));
  });
}
