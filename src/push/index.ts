export {
  PUSH_BACKOFF,
  PUSH_QUEUE,
  intentFields,
  jobOfIntent,
  pushJobId,
  pushJobOptions,
  pushSide,
  tokenDigest,
  type PushJob,
} from './jobs.js';
export { chargeRegistrations, storedCounts, tokenRoutes, type TokenRegistrationLimits } from './routes.js';
export { pushToken, tokenBody } from './schema.js';
export { deliverPush, pushBackoff, type PushOutcome, type PushDeliveryParts } from './delivery.js';
export { INTAKE_GROUP, PushIntake, type IntakeParts } from './intake.js';
export { PushThrottle } from './throttle.js';
export { TokenStore, liveTokensSince } from './token-store.js';
