export {
  recoveryPubRead,
  recoveryPubRoutes,
  recoveryPubWrite,
  storedRecoveryPub,
} from './recovery-pub-routes.js';
export { recoveryPubBody } from './recovery-pub-schema.js';
export { RecoveryPubStore } from './recovery-pub-store.js';
export { storedSync, syncRead, syncRoutes, syncWrite } from './routes.js';
export { SYNC_OPTIONAL_FIELDS, syncBody, syncRecord } from './schema.js';
export { SyncStore } from './store.js';
export { PAIRING_VARIABLES as variables, pairingSettings as settings } from './variables.js';
