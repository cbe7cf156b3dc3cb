import type { RedisClient } from '../core/redis/clients.js';
import type { RecoveryPub } from '../core/types.js';
import type { Keys } from '../core/redis/keys.js';
import type { WriteAck } from '../core/redis/write-ack.js';

/**
 * The key app's recovery xpub per pair, kept without expiry: public data the wallet verifies itself, so a pair
 * made before the sync record carried it can still enable password recovery. A new save replaces it.
 */
export class RecoveryPubStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ack: WriteAck,
  ) {}

  /** Stores the record; returns it as stored (JSON text). */
  async save(record: RecoveryPub): Promise<string> {
    const json = JSON.stringify(record);
    const key = this.keys.recoveryPub(record.wkIdentity);
    await this.redis.set(key, json);
    await this.ack.confirm(key);
    return json;
  }

  readJson(wkIdentity: string): Promise<string | null> {
    return this.redis.get(this.keys.recoveryPub(wkIdentity));
  }
}
