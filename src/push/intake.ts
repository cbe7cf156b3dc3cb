import { hostname } from 'node:os';
import type { JobsOptions, Queue } from 'bullmq';
import { errorFields, type Logger } from '../core/log.js';
import { recordPushDelayed, recordPushIntents, type IntentOutcome } from './metrics.js';
import { pushSide } from '../action-types/index.js';
import { decodeIntent } from './intent.js';
import { pushJobId, type PushJob } from './jobs.js';
import { replyCode, type RedisClient } from '../core/redis/clients.js';
import { Liveness } from '../core/redis/liveness.js';
import { RELEASE_MS, settlesWithin } from '../core/role.js';
import type { Keys } from '../core/redis/keys.js';
import type { Side } from '../core/sides.js';
import { liveTokensSince } from './tokens/store.js';

/** The consumer group every worker reads the intents through: each intent is owned by one worker at a time. */
export const INTAKE_GROUP = 'push-intake';
const BATCH = 200;
const BLOCK_MS = 1000;
const RETRY_MS = 1000;
/**
 * A consumer (a worker that has gone) is forgotten once it owns nothing and was idle this long: far longer than a
 * live worker's pause between reads, since forgetting a consumer also drops whatever it read meanwhile.
 */
const FORGET_CONSUMER_MS = 3_600_000;

type StreamEntry = [id: string, fields: string[] | null];

/** What the intake reads of presence: whether a side of the pair has an ack-capable socket now. */
export interface AckPresence {
  ackCapable(wkIdentity: string, side: Side): Promise<boolean>;
}

export interface IntakeParts {
  /** A connection of its own: the intake blocks on it while waiting for intents. */
  redis: RedisClient;
  keys: Keys;
  /** The push queue the jobs go to. */
  queue: Queue;
  jobOptions: JobsOptions;
  claimIdleMs: number;
  /**
   * `ms` (PUSH_ACK_GRACE_MS): how long after its record a job waits for an ack when its side is ack-capable; 0 or
   * no `grace`: never.
   */
  grace?: { ms: number; presence: AckPresence };
  /** The connection's liveness PING period (REDIS_LIVENESS_INTERVAL_MS). */
  livenessIntervalMs: number;
  log: Logger;
  /** Defaults to an hour. */
  forgetAfterMs?: number;
}

/**
 * Turns the push intents the action route appends (docs/operations.md#push-queue) into push jobs. An intent is
 * acknowledged and deleted only once its job is in the queue (or it needs none), so a worker that dies holding
 * intents leaves them pending; another worker claims them after `claimIdleMs`. Queuing an intent twice is
 * harmless: the job id is the record's, and BullMQ keeps one job per id.
 */
export class PushIntake {
  private readonly consumer = `${hostname()}-${process.pid}`;
  private readonly stream: string;
  private stopping = false;
  /** Blocked on XREADGROUP for new intents: the only moment a stop may cut the connection. */
  private waiting = false;
  private running: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private groupReady = false;
  /**
   * After a start, a failure or a lost connection, this consumer's own unacknowledged intents are taken before new
   * ones: a read Redis answered on a connection that then died delivered intents to this consumer that it never saw.
   */
  private ownFirst = true;
  private claimCursor = '0-0';
  private nextClaimAt = 0;
  private failing = false;
  private liveness: Liveness | undefined;

  constructor(private readonly parts: IntakeParts) {
    this.stream = parts.keys.pushIntents;
  }

  /**
   * Reads until `stop`. The connection is pinged meanwhile: a silent one would leave a read blocked forever (its
   * BLOCK is the server's, a dead path never answers); the PING waits behind at most one BLOCK_MS read.
   */
  start(): void {
    const { redis, livenessIntervalMs, log } = this.parts;
    this.liveness = new Liveness(redis, {
      client: 'pushIntake',
      intervalMs: livenessIntervalMs,
      blockedMs: BLOCK_MS,
      log,
    });
    // 'close': this connection; '-node': one of a cluster's.
    for (const event of ['close', '-node']) redis.on(event, () => (this.ownFirst = true));
    this.running = this.run();
  }

  /**
   * Ends a blocked read at once, but lets a batch in hand finish first: cut off mid-batch, its intents would stay
   * pending on this worker until another one claims them after `claimIdleMs`.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.liveness?.stop();
    this.wake?.();
    if (this.waiting) this.parts.redis.disconnect();
    await settlesWithin(this.running ?? Promise.resolve(), RELEASE_MS);
    this.parts.redis.disconnect();
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      try {
        if (!this.groupReady) await this.createGroup();
        const entries = await this.next();
        if (entries.length > 0) await this.take(entries);
        if (this.failing) this.parts.log.info('push intake resumed');
        this.failing = false;
      } catch (err) {
        if (this.stopping) return;
        // NOGROUP: the stream went away with its group (a Redis restarted empty, a FLUSHALL).
        if (replyCode(err) === 'NOGROUP') this.groupReady = false;
        this.ownFirst = true;
        if (!this.failing) this.parts.log.warn('push intake failed; retrying', errorFields(err));
        this.failing = true;
        await this.pause(RETRY_MS);
      }
    }
  }

  private async createGroup(): Promise<void> {
    try {
      // From the stream's start: intents appended before any worker ran are still taken.
      await this.parts.redis.xgroup('CREATE', this.stream, INTAKE_GROUP, '0', 'MKSTREAM');
    } catch (err) {
      if (replyCode(err) !== 'BUSYGROUP') throw err;
    }
    this.groupReady = true;
  }

  /** Intents of a worker that went away first, then this worker's own unacknowledged ones, then new ones. */
  private async next(): Promise<StreamEntry[]> {
    if (Date.now() >= this.nextClaimAt) {
      const claimed = await this.claim();
      if (claimed.length > 0) return claimed;
    }
    if (this.ownFirst) {
      const own = await this.read('0');
      if (own.length > 0) return own;
      this.ownFirst = false;
    }
    if (this.stopping) return [];
    this.waiting = true;
    try {
      return await this.read('>');
    } finally {
      this.waiting = false;
    }
  }

  private async read(from: '0' | '>'): Promise<StreamEntry[]> {
    const block = from === '>' ? ['BLOCK', BLOCK_MS] : [];
    const reply = (await this.parts.redis.call(
      'XREADGROUP',
      'GROUP',
      INTAKE_GROUP,
      this.consumer,
      'COUNT',
      BATCH,
      ...block,
      'STREAMS',
      this.stream,
      from,
    )) as [string, StreamEntry[]][] | null;
    return reply?.[0]?.[1] ?? [];
  }

  /** One step of XAUTOCLAIM's walk over the pending intents; a finished walk forgets consumers long gone. */
  private async claim(): Promise<StreamEntry[]> {
    const { redis, claimIdleMs } = this.parts;
    const [cursor, entries] = (await redis.xautoclaim(
      this.stream,
      INTAKE_GROUP,
      this.consumer,
      claimIdleMs,
      this.claimCursor,
      'COUNT',
      BATCH,
    )) as [string, StreamEntry[]];
    this.claimCursor = cursor;
    if (cursor === '0-0') {
      this.nextClaimAt = Date.now() + claimIdleMs / 2;
      await this.forgetGoneConsumers();
    }
    return entries;
  }

  private async forgetGoneConsumers(): Promise<void> {
    const { redis, forgetAfterMs = FORGET_CONSUMER_MS } = this.parts;
    const consumers = (await redis.call('XINFO', 'CONSUMERS', this.stream, INTAKE_GROUP)) as unknown[][];
    for (const consumer of consumers) {
      const info = new Map<string, unknown>();
      for (let i = 0; i + 1 < consumer.length; i += 2) info.set(String(consumer[i]), consumer[i + 1]);
      const name = String(info.get('name'));
      const gone = info.get('pending') === 0 && Number(info.get('idle')) > forgetAfterMs;
      if (gone && name !== this.consumer) await redis.xgroup('DELCONSUMER', this.stream, INTAKE_GROUP, name);
    }
  }

  /** Queues the jobs of the intents whose side has tokens, then acknowledges and deletes all of them. */
  private async take(entries: StreamEntry[]): Promise<void> {
    const { redis, keys, queue, jobOptions } = this.parts;
    const now = Date.now();
    const counts: Record<IntentOutcome, number> = { queued: 0, no_tokens: 0, expired: 0, malformed: 0 };
    const candidates: PushJob[] = [];
    for (const [, fields] of entries) {
      const intent = decodeIntent(fields);
      // A deleted entry (null fields) was trimmed: older than any action can live.
      if (fields === null || (intent && Date.parse(intent.expiresAt) <= now)) counts.expired++;
      else if (!intent || !pushSide(intent.action)) counts.malformed++;
      else candidates.push({ ...intent, done: [] });
    }
    const since = liveTokensSince(now);
    const tokens = await Promise.all(
      candidates.map((job) =>
        redis.zcount(keys.tokens(job.wkIdentity, pushSide(job.action)!), since, '+inf'),
      ),
    );
    const jobs = candidates.filter((_, i) => tokens[i]! > 0);
    counts.queued = jobs.length;
    counts.no_tokens = candidates.length - jobs.length;
    const delays = await this.graceDelays(jobs, now);
    if (jobs.length > 0) {
      await queue.addBulk(
        jobs.map((job, i) => ({
          name: job.action,
          data: job,
          opts: { ...jobOptions, jobId: pushJobId(job), ...(delays[i]! > 0 ? { delay: delays[i] } : {}) },
        })),
      );
    }
    const ids = entries.map(([id]) => id);
    // One transaction: an intent acknowledged but left in the stream would be read by no one until trimmed.
    const replies = await redis
      .multi()
      .xack(this.stream, INTAKE_GROUP, ...ids)
      .xdel(this.stream, ...ids)
      .exec();
    for (const [err] of replies ?? []) if (err) throw err;
    for (const [outcome, count] of Object.entries(counts)) recordPushIntents(outcome as IntentOutcome, count);
    recordPushDelayed(delays.filter((delay) => delay > 0).length);
  }

  /**
   * How long each job waits for an ack: until its record's createdAt + the grace, at most the grace, when its side
   * is ack-capable now (an intent without createdAt counts from now), else not at all.
   */
  private graceDelays(jobs: PushJob[], now: number): Promise<number[]> {
    const { ms = 0, presence } = this.parts.grace ?? {};
    return Promise.all(
      jobs.map(async (job) => {
        if (ms === 0 || !(await presence!.ackCapable(job.wkIdentity, pushSide(job.action)!))) return 0;
        const createdMs = job.createdAt === undefined ? now : Date.parse(job.createdAt);
        // Never longer than the grace: a createdAt ahead of this clock (another pod's) does not hold the push.
        return Math.min(ms, Math.max(0, createdMs + ms - now));
      }),
    );
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
