import type { LimitedReply, LimitedWork } from '../core/limits/rate-limit.js';
import { Cluster } from 'ioredis';
import { encodeIntent } from '../push/index.js';
import { waitReady, type RedisClient } from '../core/redis/clients.js';
import type { Keys } from '../core/redis/keys.js';
import { defineScript, readScript } from '../core/redis/scripts.js';
import type { WriteAck } from '../core/redis/write-ack.js';

const LIMITED_READ = readScript(new URL('lua/read-limited-2.lua', import.meta.url));
const REPLACE_GUARDED = readScript(new URL('lua/replace-guarded-2.lua', import.meta.url));

interface Utxo {
  txid: string;
  vout: number | string;
  scriptPubKey?: string;
  satoshis?: number | string;
  confirmations?: number;
  coinbase?: boolean;
}

export interface ActionRequest {
  chain: string;
  wkIdentity: string;
  action: string;
  payload: string;
  path?: string;
  utxos?: Utxo[];
}

export interface ActionRecord extends ActionRequest {
  /** A random identifier of this stored record, new on every POST: what deliveries and push jobs go by. */
  id: string;
  createdAt: string;
  expiresAt: string;
  /** The same as expiresAt, under API_PROFILE=ssp-apps (the released apps' countdown reads this name). */
  expireAt?: string;
}

/**
 * Who wrote a record: a verified (signed) write of a request to the key, which stays the pair's pending request
 * until replaced; any other write that a signature, a pin or a mode guards; or an unsigned one no pin can guard (an
 * exempt or unknown type), which never replaces a pending verified request
 * (docs/api.md#the-pending-request-is-the-pairs).
 */
export type WriteOrigin = 'verified-request' | 'plain' | 'unguarded';

/** An unguarded write found a verified request pending. */
export class PendingVerified extends Error {
  override name = 'PendingVerified';
}

export interface SavedAction {
  /** The record as stored (JSON text), so the answer needs no second serialization. */
  json: string;
  /** Why the push intent asked for could not be appended; the record is stored all the same. */
  intentMissed?: unknown;
}

/** A record as stored starts with its id (records are serialized id first); ids are base64url. */
const ID_FIRST = /^\{"id":"([A-Za-z0-9_-]{1,64})",/;

/**
 * The entity tag of a stored record (JSON text), the same on every pod: `"<id>"`, read off the text without
 * parsing it, since every POST draws a new id. Anything else a tag names is added after a `.`, which no id holds.
 * null for text that does not start with an id.
 */
export function recordTag(json: string): string | null {
  const id = ID_FIRST.exec(json)?.[1];
  return id === undefined ? null : `"${id}"`;
}

/**
 * One mailbox per wallet–key pair. A POST replaces the mailbox; reads never delete (both apps read it), so
 * whatever is left disappears with the key's TTL.
 */
export class ActionStore {
  private readonly limitedRead;
  private readonly replaceGuarded;
  /** Per mailbox, the last save still in flight (see save). */
  private readonly inOrder = new Map<string, Promise<void>>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ttlSeconds: number,
    private readonly ack: WriteAck,
  ) {
    this.limitedRead = defineScript<LimitedReply<string | null>>(
      redis,
      'relayActionReadLimited',
      LIMITED_READ,
    );
    this.replaceGuarded = defineScript<number>(redis, 'relayActionReplace', REPLACE_GUARDED);
  }

  /**
   * Stores the record and, with `appendPushIntent`, its push intent in the same round trip: the worker's intake
   * turns intents into push jobs, so the write path pays one command, not BullMQ's job. An intent must never
   * reach Redis before the record it names (the worker would find the mailbox without it and skip the push): on
   * one connection (a single Redis, a Sentinel master) commands run in the order sent, so both go at once; on a
   * cluster the stream may live on another node, so the intent waits for the write's answer there. Two plain
   * commands rather than one script: a script costs Redis, the part that does not scale out, more per write than
   * it saves the API (docs/benchmarks.md). With REDIS_WAIT_REPLICAS the intent is replicated like the record.
   */
  save(record: ActionRecord, appendPushIntent: boolean, origin: WriteOrigin): Promise<SavedAction> {
    const key = this.keys.action(record.wkIdentity);
    // A pair's saves resolve in the order they were sent to Redis (the order its mailbox took them), whatever
    // each one's round trips: the events that follow them must not overtake each other.
    const previous = this.inOrder.get(key);
    const saved = this.write(record, appendPushIntent, origin);
    const result = previous ? Promise.all([saved, previous]).then(([done]) => done) : saved;
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.inOrder.set(key, settled);
    void settled.then(() => {
      if (this.inOrder.get(key) === settled) this.inOrder.delete(key);
    });
    return result;
  }

  private async write(
    record: ActionRecord,
    appendPushIntent: boolean,
    origin: WriteOrigin,
  ): Promise<SavedAction> {
    const json = JSON.stringify(record);
    const key = this.keys.action(record.wkIdentity);
    const mark = this.keys.actionVerified(record.wkIdentity);
    const stored = this.replace(key, mark, json, origin);
    // An unguarded write may be refused: its intent waits for the write's answer, as on a cluster.
    if (appendPushIntent && (this.redis instanceof Cluster || origin === 'unguarded')) await stored;
    const [, intentMissed] = await Promise.all([
      stored,
      appendPushIntent
        ? this.appendIntent(record).then(
            () => undefined,
            (err: unknown) => err ?? new Error('XADD failed'),
          )
        : undefined,
    ]);
    const appended = appendPushIntent && intentMissed === undefined;
    await this.ack.confirm(key, mark, ...(appended ? [this.keys.pushIntents] : []));
    return { json, intentMissed };
  }

  /** The common plain write stays two plain commands; the rare verified request or unguarded write is a script. */
  private async replace(key: string, mark: string, json: string, origin: WriteOrigin): Promise<void> {
    if (origin === 'plain') {
      await Promise.all([this.redis.set(key, json, 'EX', this.ttlSeconds), this.redis.del(mark)]);
      return;
    }
    if ((await this.replaceGuarded([key, mark], [json, this.ttlSeconds, origin])) === 0) {
      throw new PendingVerified();
    }
  }

  /** Entries older than any action can live name no record any more: each append trims them. */
  private appendIntent(record: ActionRecord) {
    const minId = Date.now() - this.ttlSeconds * 1000;
    return this.redis.xadd(this.keys.pushIntents, 'MINID', minId, '*', ...encodeIntent(record));
  }

  /** Resolves once the mailbox's client is connected; rejects after `timeoutMs`. */
  whenReady(timeoutMs: number): Promise<void> {
    return waitReady(this.redis, timeoutMs);
  }

  /** The stored record as JSON text, or null: passed through without parsing (payloads reach 1 MB). */
  async readJson(wkIdentity: string): Promise<string | null> {
    return this.redis.get(this.keys.action(wkIdentity));
  }

  /** readJson as work the global rate limit can run in its own script (GlobalLimit.runWithinLimit). */
  recordRead(wkIdentity: string): LimitedWork<string | null> {
    const key = this.keys.action(wkIdentity);
    const unlimited = () => this.redis.get(key);
    return { redis: this.redis, script: this.limitedRead, keys: [key], args: [], unlimited };
  }
}
