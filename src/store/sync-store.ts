import type { Redis } from 'ioredis';
import type { SyncRecord } from '../types.js';
import type { Keys } from './keys.js';
import { defineScript } from './scripts.js';

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
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly lifecycle: SyncLifecycle,
  ) {
    this.readWithGrace = defineScript<string | null>(redis, 'relaySyncRead', 1, READ_WITH_GRACE);
  }

  /** Replaces any earlier record for the wallet identity (SET overwrites every field). */
  async save(record: SyncRecord): Promise<void> {
    await this.redis.set(
      this.keys.sync(record.walletIdentity),
      JSON.stringify(record),
      'EX',
      this.lifecycle.ttlSeconds,
    );
  }

  async read(walletIdentity: string): Promise<SyncRecord | null> {
    const key = this.keys.sync(walletIdentity);
    const grace = this.lifecycle.readGraceSeconds;
    const value = grace === 0 ? await this.redis.getdel(key) : await this.readWithGrace([key], [grace]);
    return value === null ? null : (JSON.parse(value) as SyncRecord);
  }
}
