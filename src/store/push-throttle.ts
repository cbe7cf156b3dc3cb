import type { Side } from '../action-types.js';
import type { RedisClient } from '../redis/clients.js';
import type { Keys } from './keys.js';
import { defineScript } from './scripts.js';

const WINDOW_MS = 60_000;

// A fixed one-minute window per pair side: the first push of a window starts its expiry.
const COUNT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return count
`;

/**
 * PUSH_PER_PAIR_PER_MINUTE: anyone who knows a pair's identity can store actions for it, and each would ring the
 * pair's phones. Counted by the worker when it is about to send, so the API's write path pays nothing for it.
 */
export class PushThrottle {
  private readonly count;

  constructor(
    redis: RedisClient,
    private readonly keys: Keys,
    private readonly perMinute: number,
  ) {
    this.count = defineScript<number>(redis, 'relayPushCount', 1, COUNT);
  }

  /**
   * 'throttled' when this side of the pair had its pushes for the minute, else undefined. Only a job's first
   * attempt counts: a retry sends the same push again to the tokens that failed.
   */
  async check(wkIdentity: string, side: Side, attemptsMade: number): Promise<'throttled' | undefined> {
    if (attemptsMade > 0) return undefined;
    const count = await this.count([this.keys.pushCount(wkIdentity, side)], [WINDOW_MS]);
    return count > this.perMinute ? 'throttled' : undefined;
  }
}
