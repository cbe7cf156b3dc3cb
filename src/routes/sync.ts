import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { jsonBody, SYNC_BODY_LIMIT } from '../http/body.js';
import { okJson, type RelayState } from '../http/context.js';
import { AppError } from '../http/errors.js';
import { validator } from '../http/validate.js';
import { idParams } from '../schemas/common.js';
import { syncBody } from '../schemas/sync.js';
import type { SyncStore } from '../store/sync-store.js';
import type { SyncRecord } from '../types.js';

const parseBody = validator<SyncRecord>('body', syncBody);
const parseParams = validator<{ id: string }>('params', idParams);

/** The stored record: exactly the specification's fields that were given, in its order. */
function toRecord(body: SyncRecord): SyncRecord {
  return {
    chain: body.chain,
    walletIdentity: body.walletIdentity,
    keyXpub: body.keyXpub,
    wkIdentity: body.wkIdentity,
    ...(body.generatedAddress !== undefined ? { generatedAddress: body.generatedAddress } : {}),
    ...(body.publicNonces !== undefined ? { publicNonces: body.publicNonces } : {}),
  };
}

/**
 * `writeBudget` charges each POST's body to the client's byte budget (see http/rate-limit.ts); `signed` checks
 * and removes an identity signature (see http/auth.ts).
 */
export function syncRoutes(
  router: Router<RelayState>,
  store: SyncStore,
  guards: { writeBudget: Middleware<RelayState>; signed: Middleware<RelayState> },
): void {
  router.post('/v1/sync', jsonBody(SYNC_BODY_LIMIT), guards.writeBudget, guards.signed, async (ctx) => {
    const record = toRecord(parseBody(ctx.request.body));
    okJson(ctx, await store.save(record));
  });

  router.get('/v1/sync/:id', async (ctx) => {
    const { id } = parseParams({ ...ctx.params });
    const record = await store.readJson(id, ctx.state.limit);
    if (record === null)
      throw new AppError('NOT_FOUND', 'No synchronization record for this wallet identity.');
    okJson(ctx, record);
  });
}
