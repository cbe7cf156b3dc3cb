import type { Feature } from '../core/feature.js';
import { tokenRegistration, type TokenDeps } from './routes.js';
import { startPushWorker, type PushWorkerDeps } from './worker.js';

export {
  PUSH_BACKOFF,
  PUSH_QUEUE,
  jobOfIntent,
  pushJobId,
  pushJobOptions,
  tokenDigest,
  type PushJob,
} from './jobs.js';
export { createPushSender, readServiceAccount, type PushResult, type PushSettings } from './fcm/index.js';
export {
  registrationRefusal,
  tokenRegistrationLimits,
  type TokenDeps,
  type TokenRegistrationLimits,
} from './routes.js';
export { pushToken, tokenBody } from './schema.js';
export { deliverPush, pushBackoff, type PushOutcome, type PushDeliveryParts } from './delivery.js';
export { INTAKE_GROUP, PushIntake, type IntakeParts } from './intake.js';
export { PushThrottle } from './throttle.js';
export { TokenStore, liveTokensSince } from './token-store.js';

/** Push notifications: the pair's device tokens, and the worker part that delivers an action's push. */
export const push: Feature<TokenDeps, PushWorkerDeps> = {
  name: 'push',
  routes: [tokenRegistration],
  worker: startPushWorker,
};
