import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { type BodyCharge, jsonBody, SYNC_BODY_LIMIT } from '../http/body.js';
import { okJson, type RelayState } from '../http/context.js';
import { AppError } from '../http/errors.js';
import { validator } from '../http/validate.js';
import { idParams } from '../schemas/common.js';
import { syncBody } from '../schemas/sync.js';
import type { SyncStore } from '../store/sync-store.js';
import type { SyncRecord } from '../types.js';

const parseBody = validator<SyncRecord>('body', syncBody);
const parseParams = validator<{ id: string }>('params', idParams);

/** The optional fields, in the order the record keeps them. */
const OPTIONAL_FIELDS = [
  'generatedAddress',
  'publicNonces',
  'walletXpub',
  'keyIdentity',
  'redeemScript',
  'witnessScript',
  'recoveryXpub',
  'xpubSignature',
] as const satisfies readonly (keyof SyncRecord)[];

/** The stored record: exactly the documented fields that were given, in their documented order. */
function toRecord(body: SyncRecord): SyncRecord {
  const record: SyncRecord = {
    chain: body.chain,
    walletIdentity: body.walletIdentity,
    keyXpub: body.keyXpub,
    wkIdentity: body.wkIdentity,
  };
  for (const field of OPTIONAL_FIELDS) {
    if (body[field] !== undefined) Object.assign(record, { [field]: body[field] });
  }
  return record;
}

/**
 * `writeBudget` charges each POST's body, refused or not, to the client's byte budget (see http/rate-limit.ts);
 * `signed` checks and removes an identity signature (see http/auth.ts).
 */
export function syncRoutes(
  router: Router<RelayState>,
  store: SyncStore,
  guards: { writeBudget: BodyCharge; signed: Middleware<RelayState> },
): void {
  router.post('/v1/sync', jsonBody(SYNC_BODY_LIMIT, guards.writeBudget), guards.signed, async (ctx) => {
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
