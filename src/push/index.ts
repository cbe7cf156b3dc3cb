import type { Feature } from '../core/feature.js';
import { tokenRegistration, type TokenDeps } from './routes.js';
import { startPushWorker, type PushWorkerDeps } from './worker.js';

export { readServiceAccount, type PushSettings } from './fcm/index.js';
export { PUSH_QUEUE } from './jobs.js';
export {
  registrationRefusal,
  tokenRegistrationLimits,
  type RegistrationLimit,
  type TokenDeps,
  type TokenRegistrationLimits,
} from './routes.js';
export { pushToken } from './schema.js';
export { TokenStore } from './token-store.js';

/** Push notifications: the pair's device tokens, and the worker part that delivers an action's push. */
export const push: Feature<TokenDeps, PushWorkerDeps> = {
  name: 'push',
  routes: [tokenRegistration],
  worker: startPushWorker,
};
