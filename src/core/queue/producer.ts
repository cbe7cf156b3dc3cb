import { Queue, type JobsOptions } from 'bullmq';
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/clients.js';
import { logBullErrors } from './bull-errors.js';
import { queuePrefix } from './prefix.js';

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
