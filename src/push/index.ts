export {
  PUSH_BACKOFF,
  PUSH_QUEUE,
  jobOfIntent,
  pushJobId,
  pushJobOptions,
  tokenDigest,
  type PushJob,
} from './jobs.js';
export { createPushSender, type PushResult } from './fcm/index.js';
export {
  chargeRegistrations,
  storedCounts,
  tokenRoutes,
  tokenWrite,
  type TokenRegistrationLimits,
} from './routes.js';
export { pushToken, tokenBody } from './schema.js';
export { PushThrottle } from './throttle.js';
export { TokenStore, liveTokensSince } from './token-store.js';
