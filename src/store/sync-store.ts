import type { RedisClient } from '../redis/clients.js';
import type { SyncRecord } from '../types.js';
import type { Keys } from './keys.js';
import { defineScript } from './scripts.js';
import type { WriteAck } from './write-ack.js';

// First read cuts the remaining lifetime to the grace period, never lengthening it; one script, so concurrent
// reads on many pods all see the same record and the same expiry.
const READ_WITH_GRACE = `
local value = redis.call('GET', KEYS[1])
if value then
  local ttl = redis.call('TTL', KEYS[1])
  local grace = tonumber(ARGV[1])
  if ttl > grace or ttl < 0 then redis.call('EXPIRE', KEYS[1], grace) end
end
return value
`;

export interface SyncLifecycle {
  ttlSeconds: number;
  /** 0: delete on first read (GETDEL). */
  readGraceSeconds: number;
}

export class SyncStore {
  private readonly readWithGrace;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly lifecycle: SyncLifecycle,
    private readonly ack: WriteAck,
  ) {
    this.readWithGrace = defineScript<string | null>(redis, 'relaySyncRead', 1, READ_WITH_GRACE);
  }

  /** Replaces any earlier record (SET overwrites every field); returns it as stored (JSON text). */
  async save(record: SyncRecord): Promise<string> {
    const json = JSON.stringify(record);
    const key = this.keys.sync(record.walletIdentity);
    await this.redis.set(key, json, 'EX', this.lifecycle.ttlSeconds);
    await this.ack.confirm(key);
    return json;
  }

  /** The stored record as JSON text, or null; the first read starts the grace period. */
  async readJson(walletIdentity: string): Promise<string | null> {
    const key = this.keys.sync(walletIdentity);
    const grace = this.lifecycle.readGraceSeconds;
    return grace === 0 ? this.redis.getdel(key) : this.readWithGrace([key], [grace]);
  }
}
