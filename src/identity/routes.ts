import { ok } from '../core/http/context.js';
import type { MountedRoute } from '../core/feature.js';
import type { RouteSpec } from '../core/http/route-spec.js';
import { validator } from '../core/validation/validate.js';
import { idParams } from '../core/validation/common-schema.js';

const parseParams = validator<{ id: string }>('params', idParams);

/** This relay keeps no enterprise nonce pools, so the apps never need to replenish one. */
const NOTHING_TO_REPLENISH = { replenishNeeded: { key: false, wallet: false } };

export const nonceStatusRead = {
  method: 'get',
  path: '/v1/nonces/status/{id}',
  summary: 'Whether the apps must replenish enterprise nonces: never, this relay keeps no nonce pools',
  doc: 'nonce-status--get-v1noncesstatusid',
  params: idParams,
  data: 'NoncesStatus',
  errors: ['INVALID_PARAMETER'],
} satisfies RouteSpec;

/** GET /v1/nonces/status/{id}: without it the key app regenerates its nonces on every refresh. */
export const nonceStatus: MountedRoute<unknown> = {
  spec: nonceStatusRead,
  handling: () => ({
    handler: (ctx) => {
      parseParams({ ...ctx.params });
      ok(ctx, NOTHING_TO_REPLENISH);
    },
  }),
};
