import type { Redis } from 'ioredis';
import type { ActionRecord } from '../types.js';
import type { Keys } from './keys.js';

/**
 * One mailbox per wallet–key pair. A POST replaces the mailbox; reads never delete (both apps read it), so
 * whatever is left disappears with the key's TTL.
 */
export class ActionStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly ttlSeconds: number,
  ) {}

  async save(record: ActionRecord): Promise<void> {
    await this.redis.set(this.keys.action(record.wkIdentity), JSON.stringify(record), 'EX', this.ttlSeconds);
  }

  async read(wkIdentity: string): Promise<ActionRecord | null> {
    const value = await this.redis.get(this.keys.action(wkIdentity));
    return value === null ? null : (JSON.parse(value) as ActionRecord);
  }
}
