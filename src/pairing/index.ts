import type { Feature } from '../core/feature.js';
import { recoveryPubRoutes, type RecoveryPubDeps } from './recovery-pub/routes.js';
import { syncRoutes, type SyncDeps } from './routes.js';

export { recoveryPubBody } from './recovery-pub/schema.js';
export { RecoveryPubStore } from './recovery-pub/store.js';
export { syncRecord } from './schema.js';
export { SyncStore } from './store.js';

/** The pair's records: the key app's sync for the wallet, and its recovery xpub. */
export const pairing: Feature<SyncDeps & RecoveryPubDeps> = {
  routes: [...syncRoutes, ...recoveryPubRoutes],
};
