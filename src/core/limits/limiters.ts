import { RateLimiterMemory, RateLimiterRedis, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RedisClient } from '../redis/clients.js';

/**
 * A budget shared by every pod through Redis (keys `<prefix>rl:<name>:<key>`, the key mostly a client IP).
 * While Redis is down each pod falls back to the same budget in memory (`insurance`), so the relay stays
 * protected without its store.
 */
export function sharedLimiter(
  redis: RedisClient,
  keyPrefix: string,
  name: string,
  points: number,
  durationSeconds: number,
  insurance = new RateLimiterMemory({ points, duration: durationSeconds }),
): RateLimiterRedis {
  return new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: `${keyPrefix}rl:${name}`,
    points,
    duration: durationSeconds,
    rejectIfRedisNotReady: true,
    insuranceLimiter: insurance,
  });
}

/** The app's limiters by name, each built once: `points` a client may spend in `seconds`. */
export type LimiterFactory = (name: string, points: number, seconds: number) => RateLimiterAbstract;
