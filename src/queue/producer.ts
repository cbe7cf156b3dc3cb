import type { JobsOptions, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { actionTypeRule } from '../action-types.js';
import type { DeliveryConfig, PushConfig } from '../config.js';
import { errorFields, type Logger } from '../log.js';
import { recordPushEnqueueMiss } from '../metrics.js';
import type { ActionRecord } from '../types.js';
import { openQueue } from './open-queue.js';
import { PUSH_QUEUE, pushJobId, pushJobOptions, type PushJob } from './push-jobs.js';
import { SUPPORT_QUEUE, supportJobId, supportJobOptions, type SupportJob } from './support-jobs.js';

/**
 * Adds jobs to one BullMQ queue on a fail-fast client (no offline queue, command timeout): `add` resolves only
 * once Redis has the job, and rejects with a Redis connection error otherwise.
 */
export class JobProducer<T> {
  // BullMQ's generics derive job names from the data type; the producers here name jobs themselves.
  private readonly queue: Queue;

  constructor(
    private readonly redis: Redis,
    name: string,
    defaultJobOptions: JobsOptions,
    log: Logger,
  ) {
    // skipVersionCheck: the producer's only start-up command would be INFO, and a failure there would leave the
    // Queue broken for good; the worker checks the Redis version.
    this.queue = openQueue(name, { connection: redis, skipVersionCheck: true, defaultJobOptions }, log);
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

  constructor(redis: Redis, delivery: DeliveryConfig, log: Logger) {
    this.jobs = new JobProducer(redis, SUPPORT_QUEUE, supportJobOptions(delivery), log);
  }

  submit(job: SupportJob): Promise<string> {
    return this.jobs.add(job.kind, job, supportJobId(job));
  }
}

/**
 * The push producer of the action route. `enqueue` never fails: the action is stored and the socket event and
 * GET still deliver it, so a job the queue could not take is counted and logged, and the answer stays 200.
 */
export class PushProducer {
  private readonly jobs: JobProducer<PushJob>;

  constructor(redis: Redis, push: PushConfig, actionTtlSeconds: number, log: Logger) {
    this.jobs = new JobProducer(redis, PUSH_QUEUE, pushJobOptions(push, actionTtlSeconds), log);
  }

  async enqueue(record: ActionRecord, log: Logger): Promise<void> {
    if (actionTypeRule(record.action) === undefined) return;
    const { wkIdentity, action, createdAt, expiresAt } = record;
    const jobId = pushJobId(record);
    try {
      await this.jobs.add(action, { wkIdentity, action, createdAt, expiresAt, done: [] }, jobId);
    } catch (err) {
      recordPushEnqueueMiss();
      log.warn('push job not queued', { jobId, action, ...errorFields(err) });
    }
  }
}
