import { limitedScript, type LimitedReply, type RequestLimit } from '../http/rate-limit.js';
import { Cluster } from 'ioredis';
import { intentFields } from '../queue/push-jobs.js';
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

export interface SavedAction {
  /** The record as stored (JSON text), so the answer needs no second serialization. */
  json: string;
  /** Why the push intent asked for could not be appended; the record is stored all the same. */
  intentMissed?: unknown;
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
   * Stores the record and, with `announce`, appends its push intent in the same round trip: the worker's intake
   * turns intents into push jobs, so the write path pays one command, not BullMQ's job. An intent must never
   * reach Redis before the record it names (the worker would find the mailbox without it and skip the push): on
   * one connection (a single Redis, a Sentinel master) commands run in the order sent, so both go at once; on a
   * cluster the stream may live on another node, so the intent waits for the write's answer there. Two plain
   * commands rather than one script: a script saved the API about 5 µs but cost Redis, the part that does not
   * scale out, 8 µs more per write (docs/benchmarks.md). With REDIS_WAIT_REPLICAS the intent is replicated like
   * the record.
   */
  async save(record: ActionRecord, announce: boolean): Promise<SavedAction> {
    const json = JSON.stringify(record);
    const key = this.keys.action(record.wkIdentity);
    const stored = this.redis.set(key, json, 'EX', this.ttlSeconds);
    if (announce && this.redis instanceof Cluster) await stored;
    const [, intentMissed] = await Promise.all([
      stored,
      announce
        ? this.appendIntent(record).then(
            () => undefined,
            (err: unknown) => err ?? new Error('XADD failed'),
          )
        : undefined,
    ]);
    const appended = announce && intentMissed === undefined;
    await this.ack.confirm(key, ...(appended ? [this.keys.pushIntents] : []));
    return { json, intentMissed };
  }

  /** Entries older than any action can live announce nothing any more: each append trims them. */
  private appendIntent(record: ActionRecord) {
    const minId = Date.now() - this.ttlSeconds * 1000;
    return this.redis.xadd(this.keys.pushIntents, 'MINID', minId, '*', ...intentFields(record));
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
