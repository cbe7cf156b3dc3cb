import { limitedScript, type LimitedReply, type RequestLimit } from '../core/limits/rate-limit.js';
import type { RedisClient } from '../core/redis/clients.js';
import type { SyncRecord } from '../core/types.js';
import type { Keys } from '../core/redis/keys.js';
import { defineScript } from '../core/redis/scripts.js';
import type { WriteAck } from '../core/redis/write-ack.js';

// First read cuts the remaining lifetime to the grace period, never lengthening it (EXPIRE … LT, Redis 7: a key
// without expiry counts as expiring never, so it gets the grace too); one script, so concurrent reads on many
// pods all see the same record and the same expiry. `key` and `grace` name where the script finds them: in the
// plain read, or after the global limit's key and arguments (limitedScript).
const readWithGrace = (key: string, grace: string, done: string) => `
local value = redis.call('GET', ${key})
if value then redis.call('EXPIRE', ${key}, ${grace}, 'LT') end
${done}
`;
const READ_WITH_GRACE = readWithGrace('KEYS[1]', 'ARGV[1]', 'return value');
const LIMITED_READ = limitedScript(
  `if tonumber(ARGV[3]) == 0 then return {consumed, ttl, redis.call('GETDEL', KEYS[2])} end\n` +
    readWithGrace('KEYS[2]', 'ARGV[3]', 'return {consumed, ttl, value}'),
);

export interface SyncLifecycle {
  ttlSeconds: number;
  /** 0: delete on first read (GETDEL). */
  readGraceSeconds: number;
}

export class SyncStore {
  private readonly readWithGrace;
  private readonly limitedRead;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly lifecycle: SyncLifecycle,
    private readonly ack: WriteAck,
  ) {
    this.readWithGrace = defineScript<string | null>(redis, 'relaySyncRead', 1, READ_WITH_GRACE);
    this.limitedRead = defineScript<LimitedReply<string | null>>(
      redis,
      'relaySyncReadLimited',
      2,
      LIMITED_READ,
    );
  }

  /** Replaces any earlier record (SET overwrites every field); returns it as stored (JSON text). */
  async save(record: SyncRecord): Promise<string> {
    const json = JSON.stringify(record);
    const key = this.keys.sync(record.walletIdentity);
    await this.redis.set(key, json, 'EX', this.lifecycle.ttlSeconds);
    await this.ack.confirm(key);
    return json;
  }

  /** The stored record as JSON text, or null, without starting the grace period (a resent sync's answer). */
  peekJson(walletIdentity: string): Promise<string | null> {
    return this.redis.get(this.keys.sync(walletIdentity));
  }

  /**
   * The stored record as JSON text, or null; the first read starts the grace period. With `limit`, the global
   * rate limit is consumed in the same script and a refused request leaves the record as it was.
   */
  async readJson(walletIdentity: string, limit?: RequestLimit): Promise<string | null> {
    const key = this.keys.sync(walletIdentity);
    const grace = this.lifecycle.readGraceSeconds;
    const unlimited = () => (grace === 0 ? this.redis.getdel(key) : this.readWithGrace([key], [grace]));
    return limit
      ? limit.runWithinLimit({
          redis: this.redis,
          script: this.limitedRead,
          keys: [key],
          args: [grace],
          unlimited,
        })
      : unlimited();
  }
}
