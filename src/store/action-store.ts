import { waitReady, type RedisClient } from '../redis/clients.js';
import type { ActionRecord } from '../types.js';
import type { Keys } from './keys.js';
import type { WriteAck } from './write-ack.js';

/**
 * One mailbox per wallet–key pair. A POST replaces the mailbox; reads never delete (both apps read it), so
 * whatever is left disappears with the key's TTL.
 */
export class ActionStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ttlSeconds: number,
    private readonly ack: WriteAck,
  ) {}

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

  /** The stored record as JSON text, or null: passed through without parsing (payloads reach 1 MB). */
  async readJson(wkIdentity: string): Promise<string | null> {
    return this.redis.get(this.keys.action(wkIdentity));
  }
}
