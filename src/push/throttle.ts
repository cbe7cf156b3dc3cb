import type { Side } from '../core/sides.js';
import type { RedisClient } from '../core/redis/clients.js';
import type { Keys } from '../core/redis/keys.js';
import { defineScript, readScript } from '../core/redis/scripts.js';

const WINDOW_MS = 60_000;

const COUNT = readScript(new URL('lua/count-2.lua', import.meta.url));

/**
 * PUSH_PER_PAIR_PER_MINUTE: anyone who knows a pair's identity can store actions for it, and each would ring the
 * pair's phones. Counted by the worker when it is about to send, so the API's write path pays nothing for it.
 */
export class PushThrottle {
  private readonly count;

  /** `jobTtlSeconds`: how long a job may still run again (its action's lifetime); its count is kept as long. */
  constructor(
    redis: RedisClient,
    private readonly keys: Keys,
    private readonly perMinute: number,
    private readonly jobTtlSeconds: number,
  ) {
    this.count = defineScript<number>(redis, 'relayPushCount', COUNT);
  }

  /**
   * 'throttled' when this side of the pair had its pushes for the minute when the job first ran, else undefined.
   * Every run of one job gets the same answer: a re-run sends the same push again to the tokens still owed it.
   */
  async check(wkIdentity: string, side: Side, jobId: string): Promise<'throttled' | undefined> {
    const count = await this.count(
      [this.keys.pushCount(wkIdentity, side), this.keys.pushCounted(wkIdentity, side, jobId)],
      [WINDOW_MS, this.jobTtlSeconds],
    );
    return count > this.perMinute ? 'throttled' : undefined;
  }
}
