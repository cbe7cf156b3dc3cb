import type { Feature } from '../core/feature.js';
import { PUSH_VARIABLES, pushSettings } from './variables.js';
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
export const push = {
  config: { variables: PUSH_VARIABLES, settings: pushSettings },
  routes: [tokenRegistration],
  worker: startPushWorker,
} satisfies Feature<TokenDeps, PushWorkerDeps>;
