import { consumeWithin, type LimitedReply, type LimitedWork } from '../core/limits/rate-limit.js';
import { Cluster } from 'ioredis';
import type { RateLimiterRedis } from 'rate-limiter-flexible';
import { actionTypeRule } from '../action-types/index.js';
import { encodeIntent } from '../push/index.js';
import { newRecordId } from '../core/record-id.js';
import type { Side } from '../core/sides.js';
import { waitReady, type RedisClient } from '../core/redis/clients.js';
import type { Keys } from '../core/redis/keys.js';
import { defineScript, readScript } from '../core/redis/scripts.js';
import type { WriteAck } from '../core/redis/write-ack.js';
import type { StreamSettings } from './variables.js';
import { streamMetrics } from './metrics.js';

const LIMITED_READ = readScript(new URL('lua/read-limited-3.lua', import.meta.url));
const READ_RECORD = readScript(new URL('lua/read-record-2.lua', import.meta.url));
const ACK = readScript(new URL('lua/ack-3.lua', import.meta.url));
const ACK_LIMITED = readScript(new URL('lua/ack-limited-4.lua', import.meta.url));
const REPLACE_APPEND = readScript(new URL('lua/replace-append-4.lua', import.meta.url));
const READ_STREAM = readScript(new URL('lua/read-stream-3.lua', import.meta.url));
const RENEW_EPOCH = readScript(new URL('lua/renew-epoch-2.lua', import.meta.url));

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
  /** The direction's epoch and the record's offset in it: only records of a type the table routes have them. */
  epoch?: string;
  offset?: number;
}

/**
 * The read scripts' reply: the record and its receipt's JSON; for a record whose id the request named, no record
 * but its id; null for an empty mailbox.
 */
export type RawRead = [string, string | null] | [null, string | null, string] | null;

/** The mailbox read out of a read script's reply. */
export function mailboxRead(raw: RawRead): MailboxRead | NamedRecord | null {
  if (raw === null) return null;
  if (raw[0] !== null) return withParsedReceipt(raw[0], raw[1]);
  const receipt = parseReceipt(raw[1]);
  return receipt === undefined ? { id: raw[2] } : { id: raw[2], receipt };
}

/** A stored record (JSON text) and its receipt, from the receipt's JSON as stored (or null). */
function withParsedReceipt(json: string, receiptJson: string | null): MailboxRead {
  const receipt = parseReceipt(receiptJson);
  return receipt === undefined ? { json } : { json, receipt };
}

/** A client's position in a direction's stream: the epoch and the offset of the last record it has (0: none). */
export interface StreamPosition {
  epoch?: string;
  offset: number;
}

/** The last record a pod delivered in a direction: its epoch, offset and, when known, id. */
export interface DeliveredPosition {
  epoch: string;
  offset: number;
  id?: string;
}

/** A direction's records after a client's position, as a resuming client gets them (docs/api.md#the-pairs-stream). */
export interface StreamRead {
  /** The direction's current epoch and last offset (null and 0 when it has no position). */
  epoch: string | null;
  offset: number;
  /** Whether every record after the client's position is among `records`. */
  recovered: boolean;
  /**
   * In increasing offset order: the records after the position in its epoch, else every retained one, each with
   * its receipt once acknowledged.
   */
  records: ({ offset: number } & MailboxRead)[];
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
  /** The record as stored: with its epoch and offset when it has a direction. */
  record: ActionRecord;
  /** Why the push intent asked for could not be appended; the record is stored all the same. */
  intentMissed?: unknown;
}

/** A record as stored starts with its id (records are serialized id first); ids are base64url. */
const ID_FIRST = /^\{"id":"([A-Za-z0-9_-]{1,64})",/;
/** A tag recordTag gives: the record's id, then its receipt's time. */
const TAG = /^"([A-Za-z0-9_-]{1,64})(?:\.[0-9a-z]+)?"$/;
/** The most ids of a request's tags a read looks for: more only cost the read, a 304 is told all the same. */
const NAMED_MAX = 4;

/**
 * The entity tag of a stored record (JSON text), the same on every pod: `"<id>"`, read off the text without
 * parsing it, since every POST draws a new id; with its receipt, `"<id>.<the receipt's time in base 36 ms>"` (a
 * `.`, which no id holds). null for text that does not start with an id.
 */
export function recordTag(json: string, receipt?: Receipt): string | null {
  const id = ID_FIRST.exec(json)?.[1];
  return id === undefined ? null : idTag(id, receipt);
}

/** The entity tag of the record `id` with its receipt, if any (see recordTag). */
export function idTag(id: string, receipt?: Receipt): string {
  return receipt === undefined ? `"${id}"` : `"${id}.${Date.parse(receipt.at).toString(36)}"`;
}

/** The record ids an `If-None-Match`'s tags name (see namedTags), for a read to skip that record's text. */
export function namedIds(tags: readonly string[] | '*'): string[] {
  if (tags === '*') return ['*'];
  const ids: string[] = [];
  for (const tag of tags) {
    const id = TAG.exec(tag)?.[1];
    if (id !== undefined && !ids.includes(id) && ids.length < NAMED_MAX) ids.push(id);
  }
  return ids;
}

/** The first ack of a record: its target side, and when (docs/api.md#acks-and-receipts). */
export interface Receipt {
  side: Side;
  at: string;
}

/** The mailbox's record (JSON text) and, once it was acknowledged, its receipt. */
export interface MailboxRead {
  json: string;
  receipt?: Receipt;
}

/** The mailbox's record when the request named its id: not read, only its id and receipt. */
export interface NamedRecord {
  id: string;
  receipt?: Receipt;
}

/** The record as GET answers it: the stored text, with `delivered` once acknowledged. */
export function withReceipt({ json, receipt }: MailboxRead): string {
  return receipt === undefined ? json : `${json.slice(0, -1)},"delivered":${JSON.stringify(receipt)}}`;
}

/** The `delivered` event: the acknowledged record and its receipt. */
export interface DeliveredEvent extends Receipt {
  wkIdentity: string;
  id: string;
  action: string;
  epoch: string;
  offset: number;
}

/** Where the ack script publishes a first ack's notice, per target side; undefined: the caller publishes. */
export interface ReceiptNotice {
  /** The channel of the sender side's room, by the record's target side. */
  channels: Record<Side, string>;
  /** The notice's text before the event's JSON. */
  header: string;
}

/** An ack that stored or found the record's receipt: the `delivered` event, and whether this ack stored it. */
export interface Acknowledged {
  first: boolean;
  event: DeliveredEvent;
  json: string;
  published: boolean;
}

/**
 * An ack that recorded nothing: no retained record with that id, a record to the other side than the one
 * acknowledging, or the client's budget spent.
 */
export type AckRefusal = 'not_found' | 'other_side' | 'rate_limited';

export type AckResult = Acknowledged | AckRefusal;

/** The budget a client's ack spends one point of (a socket ack: the join budget), and the client's key in it. */
export interface AckBudget {
  limiter: RateLimiterRedis;
  client: string;
}

type AckReply = [0] | [3, Side] | [1 | 2, string, Side, string, string, number, string];

/** A stored receipt's JSON: the relay's own, so parsed as such; anything else is no receipt. */
function parseReceipt(text: string | null | undefined): Receipt | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const { side, at } = JSON.parse(text) as Partial<Receipt>;
    return (side === 'key' || side === 'wallet') && typeof at === 'string' ? { side, at } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One mailbox per wallet–key pair. A POST replaces the mailbox; reads never delete (both apps read it), so
 * whatever is left disappears with the key's TTL.
 */
export class ActionStore {
  private readonly limitedRead;
  private readonly readRecord;
  private readonly ackScript;
  private readonly ackLimited;
  private readonly replaceAppend;
  private readonly readStreamScript;
  private readonly renewEpochScript;
  /** Per mailbox, the last save still in flight (see save). */
  private readonly inOrder = new Map<string, Promise<void>>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ttlSeconds: number,
    private readonly stream: StreamSettings,
    private readonly ack: WriteAck,
  ) {
    this.limitedRead = defineScript<LimitedReply<RawRead>>(redis, 'relayActionReadLimited', LIMITED_READ);
    this.readRecord = defineScript<RawRead>(redis, 'relayActionReadRecord', READ_RECORD);
    this.ackScript = defineScript<AckReply>(redis, 'relayActionAck', ACK);
    this.ackLimited = defineScript<LimitedReply<AckReply>>(redis, 'relayActionAckLimited', ACK_LIMITED);
    this.replaceAppend = defineScript<0 | 1 | [string, number]>(
      redis,
      'relayActionReplaceAppend',
      REPLACE_APPEND,
    );
    this.readStreamScript = defineScript<(string | number | null)[]>(
      redis,
      'relayActionReadStream',
      READ_STREAM,
    );
    this.renewEpochScript = defineScript<0 | 1>(redis, 'relayActionRenewEpoch', RENEW_EPOCH);
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
    const key = this.keys.action(record.wkIdentity);
    const mark = this.keys.actionVerified(record.wkIdentity);
    const stored = this.replace(record, origin);
    // An unguarded write may be refused: its intent waits for the write's answer, as on a cluster.
    if (appendPushIntent && (this.redis instanceof Cluster || origin === 'unguarded')) await stored;
    const [saved, intentMissed] = await Promise.all([
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
    return { ...saved, intentMissed };
  }

  /**
   * A record with a direction is one script: the mailbox write and the stream append, so both or neither happen
   * and offsets follow the order the mailbox took the writes. Of the others, the common plain write stays two
   * plain commands; the rare unguarded one is the same script without the append.
   */
  private async replace(
    record: ActionRecord,
    origin: WriteOrigin,
  ): Promise<Omit<SavedAction, 'intentMissed'>> {
    const { wkIdentity } = record;
    const key = this.keys.action(wkIdentity);
    const mark = this.keys.actionVerified(wkIdentity);
    const json = JSON.stringify(record);
    const side = actionTypeRule(record.action)?.side;
    if (side === undefined && origin === 'plain') {
      await Promise.all([this.redis.set(key, json, 'EX', this.ttlSeconds), this.redis.del(mark)]);
      return { json, record };
    }
    const { length, maxBytes, metaTtlSeconds } = this.stream;
    const sideKeys = side ?? 'key';
    // A record with a direction goes without its closing brace: the script appends its epoch and offset.
    const open = side === undefined ? json : json.slice(0, -1);
    const result = await this.replaceAppend(
      [key, mark, this.keys.stream(wkIdentity, sideKeys), this.keys.streamMeta(wkIdentity, sideKeys)],
      [
        open,
        this.ttlSeconds,
        origin,
        side === undefined ? '' : newRecordId(),
        length,
        maxBytes,
        metaTtlSeconds,
      ],
    );
    if (result === 0) throw new PendingVerified();
    if (result === 1) return { json, record };
    const [epoch, offset] = result;
    streamMetrics.appended(side!);
    // The same bytes the script stored: epochs need no escaping.
    return {
      json: `${open},"epoch":"${epoch}","offset":${offset}}`,
      record: { ...record, epoch, offset },
    };
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

  /**
   * The mailbox's record and its receipt, as work the global rate limit can run in its own script
   * (GlobalLimit.runWithinLimit); the record is not read when its id is one of `named` (namedIds). The caller
   * parses the reply with `mailboxRead`.
   */
  recordRead(wkIdentity: string, named: string[] = []): LimitedWork<RawRead> {
    const keys = [this.keys.action(wkIdentity), this.keys.receipts(wkIdentity)];
    const unlimited = () => this.readRecord(keys, named);
    return { redis: this.redis, script: this.limitedRead, keys, args: named, unlimited };
  }

  /**
   * Acknowledges the record `id` of the pair as `side` (undefined: either side) (docs/api.md#acks-and-receipts):
   * one script, which stores the first receipt and, given `notice`, publishes its `delivered` notice. A `budget`
   * is spent in the same script where its key is on the pair's node; on a cluster it is in another slot, so it is
   * spent first in its own round trip (sent together, a refused ack would be recorded all the same).
   */
  async acknowledge(
    wkIdentity: string,
    id: string,
    side: Side | undefined,
    notice: ReceiptNotice | undefined,
    budget?: AckBudget,
  ): Promise<AckResult> {
    const at = new Date().toISOString();
    const keys = [
      this.keys.receipts(wkIdentity),
      this.keys.stream(wkIdentity, 'key'),
      this.keys.stream(wkIdentity, 'wallet'),
    ];
    const args = [
      id,
      side ?? '',
      at,
      this.ttlSeconds,
      this.ttlSeconds * 1000,
      this.stream.length,
      notice?.channels.key ?? '',
      notice?.channels.wallet ?? '',
      wkIdentity,
      notice?.header ?? '',
    ];
    let reply: AckReply;
    if (budget === undefined) reply = await this.ackScript(keys, args);
    else if (this.redis instanceof Cluster) {
      if ((await consumeWithin(budget.limiter, budget.client)) !== undefined) return 'rate_limited';
      reply = await this.ackScript(keys, args);
    } else {
      const { limiter, client } = budget;
      const [, , within] = await this.ackLimited(
        [limiter.getKey(client), ...keys],
        [limiter.points, limiter.duration, ...args],
      );
      if (within === undefined) return 'rate_limited';
      reply = within;
    }
    if (reply[0] === 0) return 'not_found';
    if (reply[0] === 3) return 'other_side';
    const [status, receiptJson, target, action, epoch, offset, json] = reply;
    const receipt = parseReceipt(receiptJson) ?? { side: target, at };
    return {
      first: status === 1,
      event: { wkIdentity, id, action, epoch, offset, side: receipt.side, at: receipt.at },
      json,
      published: notice !== undefined,
    };
  }

  /** A direction's epoch and last offset (null and 0 when it has none), without its records. */
  async position(wkIdentity: string, side: Side): Promise<{ epoch: string | null; offset: number }> {
    const [epoch, offset] = await this.redis.hmget(this.keys.streamMeta(wkIdentity, side), 'epoch', 'offset');
    return { epoch: epoch ?? null, offset: epoch === null ? 0 : Number(offset ?? 0) };
  }

  /**
   * A direction's records after `since`, and whether they are all there (docs/api.md#the-pairs-stream): one read
   * of at most STREAM_LENGTH entries, together with the position, so both describe the same moment.
   */
  async readStream(wkIdentity: string, side: Side, since: StreamPosition): Promise<StreamRead> {
    const keys = [
      this.keys.stream(wkIdentity, side),
      this.keys.streamMeta(wkIdentity, side),
      this.keys.receipts(wkIdentity),
    ];
    const reply = await this.readStreamScript(keys, [
      since.epoch ?? '',
      since.offset,
      this.ttlSeconds * 1000,
      this.stream.length,
    ]);
    const [epoch, last, oldest] = reply as [string | null, number, number];
    const records: StreamRead['records'] = [];
    for (let i = 3; i + 2 < reply.length; i += 3) {
      const read = withParsedReceipt(String(reply[i + 1]), reply[i + 2] as string | null);
      records.push({ offset: Number(reply[i]), ...read });
    }
    return { epoch, offset: last, recovered: recovered(since, epoch, last, oldest), records };
  }

  /**
   * Whether the position this pod `delivered` in a direction is lost (docs/operations.md#failover-and-the-stream):
   * Redis holds another epoch or none, or in that epoch a lower offset or another record at that offset (a failover
   * lost the appends). In the last two cases a new epoch is drawn, so the lost offsets are never given again
   * under the old one.
   */
  async positionLost(wkIdentity: string, side: Side, delivered: DeliveredPosition): Promise<boolean> {
    const lost = await this.renewEpochScript(
      [this.keys.stream(wkIdentity, side), this.keys.streamMeta(wkIdentity, side)],
      [
        delivered.epoch,
        delivered.offset,
        delivered.id ?? '',
        newRecordId(),
        this.stream.metaTtlSeconds,
        this.stream.length,
      ],
    );
    return lost === 1;
  }
}

/**
 * Every record after the client's offset is still retained: the client names the current epoch (or has nothing),
 * is not ahead of the last offset, and the oldest record read is at most the one it misses first. A direction
 * without a position recovers only a client that has nothing.
 */
function recovered(since: StreamPosition, epoch: string | null, last: number, oldest: number): boolean {
  if (since.offset === 0) return epoch === null || last === 0 || (oldest > 0 && oldest <= 1);
  if (epoch === null || since.epoch !== epoch || since.offset > last) return false;
  return since.offset === last || (oldest > 0 && oldest <= since.offset + 1);
}
