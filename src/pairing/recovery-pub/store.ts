import type { RedisClient } from '../../core/redis/clients.js';
import type { Keys } from '../../core/redis/keys.js';
import type { WriteAck } from '../../core/redis/write-ack.js';

/** The key app's recovery account xpub of a pair, kept RECOVERYPUB_TTL_DAYS after its last write or read. */
export interface RecoveryPub {
  wkIdentity: string;
  recoveryXpub: string;
  xpubSignature: string;
  chain: string;
  createdAt: string;
}

/**
 * The key app's recovery xpub per pair: public data the wallet verifies itself, so a pair made before the sync
 * record carried it can still enable password recovery. Each write and each read gives the record its whole
 * lifetime again, so a pair in use keeps it and an abandoned one's goes; a new save replaces it.
 */
export class RecoveryPubStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ttlSeconds: number,
    private readonly ack: WriteAck,
  ) {}

  /**
   * Rewrites the pair's record only if it has one (SET … XX: Redis decides, in one command); returns it as stored
   * (JSON text), or null when the pair has none and nothing was written.
   */
  replace(record: RecoveryPub): Promise<string | null> {
    return this.write(record, true);
  }

  /** Stores the record, the pair's or a new one; returns it as stored (JSON text). */
  async save(record: RecoveryPub): Promise<string> {
    return (await this.write(record, false))!;
  }

  /** The record as JSON text, or null; a read renews its lifetime (GETEX, one command). */
  readJson(wkIdentity: string): Promise<string | null> {
    return this.redis.getex(this.keys.recoveryPub(wkIdentity), 'EX', this.ttlSeconds);
  }

  private async write(record: RecoveryPub, onlyIfStored: boolean): Promise<string | null> {
    const json = JSON.stringify(record);
    const key = this.keys.recoveryPub(record.wkIdentity);
    const reply = onlyIfStored
      ? await this.redis.set(key, json, 'EX', this.ttlSeconds, 'XX')
      : await this.redis.set(key, json, 'EX', this.ttlSeconds);
    if (reply === null) return null;
    await this.ack.confirm(key);
    return json;
  }
}
