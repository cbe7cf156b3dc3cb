import type { Feature } from '../core/feature.js';
import { tokenRegistration, type TokenDeps } from './tokens/routes.js';
import { startPushWorker, type PushWorkerDeps } from './worker.js';

export { readServiceAccount, type PushSettings } from './fcm/index.js';
export { PUSH_QUEUE } from './jobs.js';
export {
  registrationRefusal,
  tokenRegistrationLimits,
  type RegistrationLimit,
  type TokenDeps,
  type TokenRegistrationLimits,
} from './tokens/routes.js';
export { pushToken } from './tokens/schema.js';
export { encodeIntent } from './intent.js';
export { TokenStore, type TokenRegistration } from './tokens/store.js';

/** Push notifications: the pair's device tokens, and the worker part that delivers an action's push. */
export const push: Feature<TokenDeps, PushWorkerDeps> = {
  routes: [tokenRegistration],
  worker: startPushWorker,
};
