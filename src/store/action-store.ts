import { limitedScript, type LimitedReply, type RequestLimit } from '../http/rate-limit.js';
import { waitReady, type RedisClient } from '../redis/clients.js';
import type { ActionRecord } from '../types.js';
import type { Keys, TokenSide } from './keys.js';
import { defineScript } from './scripts.js';
import { liveTokensSince } from './token-store.js';
import type { WriteAck } from './write-ack.js';

/**
 * One mailbox per wallet–key pair. A POST replaces the mailbox; reads never delete (both apps read it), so
 * whatever is left disappears with the key's TTL.
 */
const LIMITED_READ = limitedScript(`return {consumed, ttl, redis.call('GET', KEYS[2])}`);

export interface SavedAction {
  /** The record as stored (JSON text), so the answer needs no second serialization. */
  json: string;
  /** Whether the side named in `save` had push tokens when the record was written. */
  hasTokens: boolean;
}

export class ActionStore {
  private readonly limitedRead;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ttlSeconds: number,
    private readonly ack: WriteAck,
  ) {
    this.limitedRead = defineScript<LimitedReply<string | null>>(
      redis,
      'relayActionReadLimited',
      2,
      LIMITED_READ,
    );
  }

  /**
   * Stores the record. With `pushSide`, also tells whether that side of the pair has push tokens, read in the
   * same round trip as the write: the mailbox and the token set are in different hash slots (on a cluster, maybe
   * on different nodes), so no script may hold both; the two commands are sent at once instead. A count that
   * could not be read counts as tokens present, so a push is never skipped for want of an answer.
   */
  async save(record: ActionRecord, pushSide?: TokenSide): Promise<SavedAction> {
    const json = JSON.stringify(record);
    const key = this.keys.action(record.wkIdentity);
    const [, tokens] = await Promise.all([
      this.redis.set(key, json, 'EX', this.ttlSeconds),
      pushSide === undefined
        ? 0
        : this.redis
            .zcount(this.keys.tokens(record.wkIdentity, pushSide), liveTokensSince(), '+inf')
            .catch(() => 1),
    ]);
    await this.ack.confirm(key);
    return { json, hasTokens: tokens > 0 };
  }

  /** Resolves once the mailbox's client is connected; rejects after `timeoutMs`. */
  whenReady(timeoutMs: number): Promise<void> {
    return waitReady(this.redis, timeoutMs);
  }

  /**
   * The stored record as JSON text, or null: passed through without parsing (payloads reach 1 MB). With
   * `limit`, the global rate limit is consumed in the same script.
   */
  async readJson(wkIdentity: string, limit?: RequestLimit): Promise<string | null> {
    const key = this.keys.action(wkIdentity);
    const alone = () => this.redis.get(key);
    return limit
      ? limit.around({ redis: this.redis, script: this.limitedRead, keys: [key], args: [], alone })
      : alone();
  }
}
