import type Router from '@koa/router';
import { ok, type RelayState } from '../core/http/context.js';
import { validator } from '../core/validation/validate.js';
import { idParams } from '../core/validation/common-schema.js';

const parseParams = validator<{ id: string }>('params', idParams);

/** This relay keeps no enterprise nonce pools, so the apps never need to replenish one. */
const NOTHING_TO_REPLENISH = { replenishNeeded: { key: false, wallet: false } };

/** GET /v1/nonces/status/{id}: without it the key app regenerates its nonces on every refresh. */
export function noncesRoutes(router: Router<RelayState>): void {
  router.get('/v1/nonces/status/:id', (ctx) => {
    parseParams({ ...ctx.params });
    ok(ctx, NOTHING_TO_REPLENISH);
  });
}
