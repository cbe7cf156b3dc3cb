import type { SignedRoute } from '../../core/signed-routes.js';
import type { PairingConfig } from '../variables.js';
import type { MountedRoute, StoredAnswer, WriteGuards } from '../../core/feature.js';
import { DEFAULT_BODY_LIMIT } from '../../core/http/body.js';
import { okJson } from '../../core/http/context.js';
import type { RouteSpec } from '../../core/http/route-spec.js';
import type { LimiterFactory } from '../../core/limits/limiters.js';
import { AppError } from '../../core/errors.js';
import { consumeOrReject } from '../../core/limits/rate-limit.js';
import { recordRecoveryPubWrite } from '../metrics.js';
import { validator } from '../../core/validation/validate.js';
import { idParams } from '../../core/validation/common-schema.js';
import { recoveryPubBody } from './schema.js';
import type { RecoveryPub, RecoveryPubStore } from './store.js';

type RecoveryPubRequest = Omit<RecoveryPub, 'createdAt'>;

const parseBody = validator<RecoveryPubRequest>('body', recoveryPubBody);
const parseParams = validator<{ id: string }>('params', idParams);

/** A resent POST is answered with the stored record while it still holds what that POST stored. */
function storedRecoveryPub(store: RecoveryPubStore): StoredAnswer {
  return async (body) => {
    const { wkIdentity, recoveryXpub, xpubSignature, chain } = parseBody({ ...body });
    const json = await store.readJson(wkIdentity);
    if (json === null) return null;
    const stored = JSON.parse(json) as RecoveryPub;
    const same =
      stored.recoveryXpub === recoveryXpub &&
      stored.xpubSignature === xpubSignature &&
      stored.chain === chain;
    return same ? json : null;
  };
}

export const recoveryPubWrite = {
  method: 'post',
  path: '/v1/recoverypub',
  summary:
    "Stores the key app's recovery xpub of a pair (always signed; kept RECOVERYPUB_TTL_DAYS after its last use; new records limited per address a day)",
  doc: 'recovery-xpub--post-v1recoverypub-get-v1recoverypubid',
  body: { component: 'RecoveryPubRequest', schema: recoveryPubBody, limitBytes: DEFAULT_BODY_LIMIT },
  data: 'RecoveryPub',
  errors: ['UNAVAILABLE'],
  signedAs: 'recoverypub',
} satisfies RouteSpec<SignedRoute>;

export const recoveryPubRead = {
  method: 'get',
  path: '/v1/recoverypub/{id}',
  summary: "The key app's recovery xpub of a pair (id is the wkIdentity)",
  doc: 'recovery-xpub--post-v1recoverypub-get-v1recoverypubid',
  params: idParams,
  data: 'RecoveryPub',
  bareForApps: true,
  errors: ['INVALID_PARAMETER', 'NOT_FOUND', 'UNAVAILABLE'],
  bearer: 'read',
} satisfies RouteSpec;

/** What the recovery xpub routes use of the app. */
export interface RecoveryPubDeps {
  config: Pick<PairingConfig, 'recoveryPub'>;
  stores: { recoveryPub: RecoveryPubStore };
  guards: WriteGuards;
  limiter: LimiterFactory;
}

/**
 * The key app's recovery account xpub (docs/api.md#recovery-xpub--post-v1recoverypub-get-v1recoverypubid).
 * `signed` requires a signature by one of the pair's keys whatever AUTH_MODE says: nobody but the pair may write
 * its record. Anyone can make a pair of their own, so `creations` bounds the new records one client address makes
 * a day; replacing the pair's own record is not charged. A creation racing another for the same pair may be
 * charged though it ends a replacement: the bound holds.
 */
export const recoveryPubRoutes: MountedRoute<RecoveryPubDeps>[] = [
  {
    spec: recoveryPubWrite,
    handling: ({ config, stores, guards, limiter }) => {
      const store = stores.recoveryPub;
      const creations = limiter('recoverypub', config.recoveryPub.creationsPerAddressPerDay, 86_400);
      return {
        charge: guards.writeBudget,
        guards: [guards.signed(recoveryPubWrite.signedAs, storedRecoveryPub(store))],
        handler: async (ctx) => {
          const { wkIdentity, recoveryXpub, xpubSignature, chain } = parseBody(ctx.request.body);
          const record = {
            wkIdentity,
            recoveryXpub,
            xpubSignature,
            chain,
            createdAt: new Date().toISOString(),
          };
          ctx.state.writing = true;
          const replaced = await store.replace(record);
          if (replaced !== null) {
            recordRecoveryPubWrite('replaced');
            okJson(ctx, replaced);
            return;
          }
          // Nothing written yet: a refused creation gives the signed message's nonce back.
          ctx.state.writing = false;
          await consumeOrReject(creations, ctx, 'recovery xpub records created from this address');
          ctx.state.writing = true;
          const created = await store.save(record);
          recordRecoveryPubWrite('created');
          okJson(ctx, created);
        },
      };
    },
  },
  {
    spec: recoveryPubRead,
    handling: ({ stores, guards }) => ({
      guards: [guards.sessionRead('pair')],
      handler: async (ctx) => {
        const { id } = parseParams({ ...ctx.params });
        const record = await stores.recoveryPub.readJson(id);
        if (record === null) throw new AppError('NOT_FOUND', 'No recovery xpub is stored for this pair.');
        okJson(ctx, record);
      },
    }),
  },
];
