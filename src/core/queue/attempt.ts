import type { LogFields } from '../log.js';

/**
 * How one attempt of a job's delivery ended: with its result, released at shutdown (the job goes back untouched),
 * or stopped by the provider's rate limit (the whole queue pauses this long, the job waits without spending an
 * attempt). Failures are thrown.
 */
export type DeliveryAttempt<R> = { result: R } | { released: LogFields } | { rateLimitedMs: number };
