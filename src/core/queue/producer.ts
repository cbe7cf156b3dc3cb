import { Queue, type JobsOptions } from 'bullmq';
import type { DeliveryConfig } from '../config/config.js';
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/clients.js';
import type { Keys } from '../redis/keys.js';
import type { WriteAck } from '../redis/write-ack.js';
import { logBullErrors } from './bull-errors.js';
import { queueKey, queuePrefix } from './prefix.js';
import {
  DEDUPE_SECONDS,
  SUPPORT_QUEUE,
  supportJobId,
  supportJobOptions,
  type SupportJob,
} from '../../support/index.js';

/**
 * Adds jobs to one BullMQ queue on a fail-fast client (no offline queue, command timeout): `add` resolves only
 * once Redis has the job, and rejects with a Redis connection error otherwise.
 */
export class JobProducer<T> {
  // BullMQ's generics derive job names from the data type; the producers here name jobs themselves.
  private readonly queue: Queue;

  constructor(
    private readonly redis: RedisClient,
    keyPrefix: string,
    name: string,
    defaultJobOptions: JobsOptions,
    log: Logger,
  ) {
    // skipVersionCheck: the producer's only start-up command would be INFO, and a failure there would leave the
    // Queue broken for good; the worker checks the Redis version.
    this.queue = new Queue(name, {
      connection: redis,
      prefix: queuePrefix(keyPrefix, name),
      skipVersionCheck: true,
      defaultJobOptions,
    });
    logBullErrors(this.queue, `${name} queue`, log);
  }

  /** Returns the job id; a job whose id is already in the queue (any state) is left as it is, not added twice. */
  async add(jobName: string, data: T, jobId: string): Promise<string> {
    // BullMQ waits for a connection before its first command instead of failing; a PING on the fail-fast client
    // fails at once while Redis is unreachable. Once connected, the add itself fails fast.
    if (this.redis.status !== 'ready') await this.redis.ping();
    const added = await this.queue.add(jobName, data, { jobId });
    return added.id!;
  }
}

/** The support forms' producer: one job per distinct submission within the dedupe window. */
export class SupportProducer {
  private readonly jobs: JobProducer<SupportJob>;

  constructor(
    private readonly redis: RedisClient,
    private readonly keyPrefix: string,
    private readonly keys: Keys,
    delivery: DeliveryConfig,
    log: Logger,
    private readonly ack: WriteAck,
  ) {
    this.jobs = new JobProducer(redis, keyPrefix, SUPPORT_QUEUE, supportJobOptions(delivery), log);
  }

  /**
   * Queues `job` and returns its id; a submission already queued or delivered within the dedupe window keeps its
   * id. `charge` runs (and may reject, queuing nothing) only for the first of identical submissions; `refund` runs
   * when a charged job could not be queued. BullMQ answers an existing job id exactly like a new one, so a marker
   * set with NX decides which submission is the first, also when duplicates arrive at the same moment.
   */
  async submit(job: SupportJob, charge: () => Promise<void>, refund: () => Promise<void>): Promise<string> {
    const jobId = supportJobId(job);
    const marker = this.keys.supportCounted(jobId);
    // On the fail-fast client this fails at once while Redis is unreachable, where BullMQ's add would wait for
    // a first connection.
    const first = (await this.redis.set(marker, '1', 'EX', DEDUPE_SECONDS, 'NX')) === 'OK';
    if (first) {
      try {
        await charge();
      } catch (err) {
        await this.redis.del(marker).catch(() => undefined);
        throw err;
      }
    }
    let id: string;
    try {
      id = await this.jobs.add(job.kind, job, jobId);
    } catch (err) {
      if (first) await Promise.allSettled([refund(), this.redis.del(marker)]);
      throw err;
    }
    // Queued but not yet replicated (→ 503): the retry finds the job and the marker, and is not charged again.
    await this.ack.confirm(queueKey(this.keyPrefix, SUPPORT_QUEUE, id), marker);
    return id;
  }
}
