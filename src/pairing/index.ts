export { recoveryPubRoutes, storedRecoveryPub } from './recovery-pub-routes.js';
export { recoveryPubBody } from './recovery-pub-schema.js';
export { RecoveryPubStore } from './recovery-pub-store.js';
export { storedSync, syncRoutes } from './routes.js';
export { SYNC_OPTIONAL_FIELDS, syncBody, syncRecord } from './schema.js';
export { SyncStore } from './store.js';
