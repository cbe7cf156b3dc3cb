import type { LimitedReply, LimitedWork } from '../core/limits/rate-limit.js';
import type { RedisClient } from '../core/redis/clients.js';
import type { Keys } from '../core/redis/keys.js';
import { defineScript, readScript } from '../core/redis/scripts.js';
import type { WriteAck } from '../core/redis/write-ack.js';

const READ_WITH_GRACE = readScript(new URL('lua/read-1.lua', import.meta.url));
const LIMITED_READ = readScript(new URL('lua/read-limited-2.lua', import.meta.url));

export interface SyncRecord {
  chain: string;
  walletIdentity: string;
  keyXpub: string;
  wkIdentity: string;
  generatedAddress?: string;
  publicNonces?: (string | { kPublic: string; kTwoPublic: string })[];
  walletXpub?: string;
  keyIdentity?: string;
  redeemScript?: string;
  witnessScript?: string;
  recoveryXpub?: string;
  xpubSignature?: string;
}

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
    this.readWithGrace = defineScript<string | null>(redis, 'relaySyncRead', READ_WITH_GRACE);
    this.limitedRead = defineScript<LimitedReply<string | null>>(redis, 'relaySyncReadLimited', LIMITED_READ);
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
   * The stored record as JSON text, or null; the first read starts the grace period. As work the global rate
   * limit can run in its own script (GlobalLimit.runWithinLimit): a refused request leaves the record as it was.
   */
  recordRead(walletIdentity: string): LimitedWork<string | null> {
    const key = this.keys.sync(walletIdentity);
    const grace = this.lifecycle.readGraceSeconds;
    const unlimited = () => (grace === 0 ? this.redis.getdel(key) : this.readWithGrace([key], [grace]));
    return { redis: this.redis, script: this.limitedRead, keys: [key], args: [grace], unlimited };
  }
}
