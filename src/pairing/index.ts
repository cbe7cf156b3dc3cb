import type { Feature } from '../core/feature.js';
import { PAIRING_VARIABLES, pairingSettings } from './variables.js';
import { recoveryPubRoutes, type RecoveryPubDeps } from './recovery-pub/routes.js';
import { syncRoutes, type SyncDeps } from './routes.js';

export { recoveryPubBody } from './recovery-pub/schema.js';
export { RecoveryPubStore } from './recovery-pub/store.js';
export { syncRecord } from './schema.js';
export { SyncStore } from './store.js';

/** The pair's records: the key app's sync for the wallet, and its recovery xpub. */
export const pairing = {
  config: { variables: PAIRING_VARIABLES, settings: pairingSettings },
  routes: [...syncRoutes, ...recoveryPubRoutes],
} satisfies Feature<SyncDeps & RecoveryPubDeps>;
