import { limitedScript, type LimitedReply, type RequestLimit } from '../http/rate-limit.js';
import { waitReady, type RedisClient } from '../redis/clients.js';
import type { ActionRecord } from '../types.js';
import type { Keys } from './keys.js';
import { defineScript } from './scripts.js';
import type { WriteAck } from './write-ack.js';

/**
 * One mailbox per wallet–key pair. A POST replaces the mailbox; reads never delete (both apps read it), so
 * whatever is left disappears with the key's TTL.
 */
const LIMITED_READ = limitedScript(`return {consumed, ttl, redis.call('GET', KEYS[2])}`);

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

  /** Returns the record as stored (JSON text), so the answer needs no second serialization. */
  async save(record: ActionRecord): Promise<string> {
    const json = JSON.stringify(record);
    const key = this.keys.action(record.wkIdentity);
    await this.redis.set(key, json, 'EX', this.ttlSeconds);
    await this.ack.confirm(key);
    return json;
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
    return limit ? limit.around(this.redis, this.limitedRead, [key], [], alone) : alone();
  }
}
