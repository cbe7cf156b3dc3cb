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
  storedCounts,
  tokenRoutes,
  tokenWrite,
  type RegistrationLimit,
  type TokenRegistrationLimits,
} from './routes.js';
export { pushToken, tokenBody } from './schema.js';
export { deliverPush, pushBackoff, type PushOutcome, type PushDeliveryParts } from './delivery.js';
export { INTAKE_GROUP, PushIntake, type IntakeParts } from './intake.js';
export { PushThrottle } from './throttle.js';
export { TokenStore, liveTokensSince } from './token-store.js';
export { PUSH_VARIABLES as variables, pushSettings as settings } from './variables.js';
