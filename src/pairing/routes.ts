import type { SignedRoute } from '../core/signed-routes.js';
import type { MountedRoute, StoredAnswer, WriteGuards } from '../core/feature.js';
import { okJson, type RelayState } from '../core/http/context.js';
import type { RouteSpec } from '../core/http/route-spec.js';
import { AppError } from '../core/errors.js';
import { readWithin } from '../core/limits/rate-limit.js';
import { validator } from '../core/validation/validate.js';
import { idParams } from '../core/validation/common-schema.js';
import { SYNC_OPTIONAL_FIELDS, syncBody } from './schema.js';
import type { SyncRecord, SyncStore } from './store.js';
import {
  registrationRefusal,
  tokenRegistrationLimits,
  type TokenDeps,
  type TokenRegistration,
  type TokenRegistrationLimits,
} from '../push/index.js';
import { recordSyncTokenSkipped } from './metrics.js';

type SyncRequest = SyncRecord & { keyToken?: string };

const validate = validator<SyncRequest>('body', syncBody);
const parseParams = validator<{ id: string }>('params', idParams);

/** The optional fields kept in the record, in the order the record keeps them (keyToken is registered instead). */
const RECORD_FIELDS = SYNC_OPTIONAL_FIELDS.filter((field) => field !== 'keyToken');

/** Validates a sync body; an optional field sent as `""` or `null` counts as absent (older key apps send them). */
function parseBody(body: unknown): SyncRequest {
  if (typeof body === 'object' && body !== null) {
    const fields = body as Record<string, unknown>;
    for (const field of SYNC_OPTIONAL_FIELDS) {
      if (fields[field] === '' || fields[field] === null) delete fields[field];
    }
  }
  return validate(body);
}

/** The stored record: exactly the documented fields that were given, in their documented order. */
function toRecord(body: SyncRequest): SyncRecord {
  const record: SyncRecord = {
    chain: body.chain,
    walletIdentity: body.walletIdentity,
    keyXpub: body.keyXpub,
    wkIdentity: body.wkIdentity,
  };
  for (const field of RECORD_FIELDS) {
    if (body[field] !== undefined) Object.assign(record, { [field]: body[field] });
  }
  return record;
}

/** A resent sync is answered with the record while it is still the one that sync stored. */
function storedSync(store: SyncStore): StoredAnswer {
  return async (body) => {
    const json = JSON.stringify(toRecord(parseBody({ ...body })));
    const stored = await store.peekJson(String(body.walletIdentity));
    return stored === json ? stored : null;
  };
}

/** docs/api.md#post-v1sync: the largest valid record (1000 nonces of 500 characters) must fit. */
const SYNC_BODY_LIMIT = 640 * 1024;

export const syncWrite = {
  method: 'post',
  path: '/v1/sync',
  summary: 'The key app stores the pairing record',
  doc: 'post-v1sync',
  body: {
    component: 'SyncRequest',
    schema: syncBody,
    limitBytes: SYNC_BODY_LIMIT,
    emptyAsAbsent: SYNC_OPTIONAL_FIELDS,
  },
  data: 'SyncRecord',
  errors: ['UNAVAILABLE'],
  signedAs: 'sync',
} satisfies RouteSpec<SignedRoute>;

export const syncRead = {
  method: 'get',
  path: '/v1/sync/{id}',
  summary: 'The wallet app polls for the pairing record of its walletIdentity',
  doc: 'get-v1syncid',
  params: idParams,
  data: 'SyncRecord',
  bareForApps: true,
  errors: ['INVALID_PARAMETER', 'NOT_FOUND', 'UNAVAILABLE'],
  consumesLimitInScript: true,
  bearer: 'read',
} satisfies RouteSpec;

/**
 * Whether a sync's keyToken may be registered: pairing matters more than the token, so a registration limit
 * refusing it skips the token (counted and logged, neither identity nor token named) instead of refusing the sync.
 */
async function mayRegister(
  limits: TokenRegistrationLimits,
  ctx: { ip: string; state: RelayState },
  token: TokenRegistration,
): Promise<boolean> {
  const refusal = await registrationRefusal(limits, ctx, token);
  if (refusal === undefined) return true;
  recordSyncTokenSkipped(refusal.limit);
  ctx.state.log.info('sync stored without its keyToken: a token registration limit refused it', {
    limit: refusal.limit,
  });
  return false;
}

/** What the sync routes use of the app: a sync may register the key app's token as POST /v1/token would. */
export interface SyncDeps extends Pick<TokenDeps, 'config' | 'limiter'> {
  stores: { sync: SyncStore } & TokenDeps['stores'];
  guards: WriteGuards;
}

/**
 * `charge` charges each POST's body, refused or not, to the client's byte budget (see core/limits/rate-limit.ts);
 * `signed` checks and removes an identity signature (see identity/route-guard.ts). A `keyToken` is registered for the pair's key side as
 * POST /v1/token would, so a freshly paired key app gets pushes at once, unless a registration limit refuses it
 * (see mayRegister).
 */
export const syncRoutes: MountedRoute<SyncDeps>[] = [
  {
    spec: syncWrite,
    handling: (deps) => {
      const { stores, guards } = deps;
      const registrations = tokenRegistrationLimits(deps);
      return {
        charge: guards.writeBudget,
        guards: [guards.signed(syncWrite.signedAs, storedSync(stores.sync))],
        handler: async (ctx) => {
          const body = parseBody(ctx.request.body);
          const token =
            body.keyToken === undefined
              ? undefined
              : { wkIdentity: body.wkIdentity, keyToken: body.keyToken };
          const register = token !== undefined && (await mayRegister(registrations, ctx, token));
          ctx.state.writing = true;
          const json = await stores.sync.save(toRecord(body));
          if (register) await stores.tokens.save(token);
          okJson(ctx, json);
        },
      };
    },
  },
  {
    spec: syncRead,
    handling: ({ stores, guards }) => ({
      guards: [guards.sessionRead('wallet')],
      handler: async (ctx) => {
        const { id } = parseParams({ ...ctx.params });
        const record = await readWithin(ctx.state.limit, stores.sync.recordRead(id));
        if (record === null)
          throw new AppError('NOT_FOUND', 'No synchronization record for this wallet identity.');
        okJson(ctx, record);
      },
    }),
  },
];
