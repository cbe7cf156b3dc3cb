import { Queue } from 'bullmq';
import type { DeliveryConfig } from '../config.js';
import type { Logger } from '../log.js';
import { warnUnlessUnavailable, type RedisClient } from '../redis/clients.js';
import type { WriteAck } from '../store/write-ack.js';
import { queueKey, queuePrefix } from './prefix.js';
import { SUPPORT_QUEUE, supportJobId, supportJobOptions, type SupportJob } from './support-jobs.js';

/**
 * Adds support jobs on a fail-fast client (no offline queue, command timeout): `submit` resolves only once
 * Redis has the job, and rejects with a Redis connection error (→ 503) otherwise.
 */
export class SupportProducer {
  private readonly queue: Queue<SupportJob>;

  constructor(
    private readonly redis: RedisClient,
    delivery: DeliveryConfig,
    log: Logger,
    private readonly ack: WriteAck,
  ) {
    // skipVersionCheck: the producer's only start-up command would be INFO, and a failure there would leave the
    // Queue broken for good; the worker checks the Redis version.
    this.queue = new Queue<SupportJob>(SUPPORT_QUEUE, {
      connection: redis,
      prefix: queuePrefix(SUPPORT_QUEUE),
      skipVersionCheck: true,
      defaultJobOptions: supportJobOptions(delivery),
    });
    this.queue.on('error', warnUnlessUnavailable(log, 'support queue error'));
  }

  /** Returns the job id; a submission already queued or delivered within the dedupe window keeps its id. */
  async submit(job: SupportJob): Promise<string> {
    // BullMQ waits for a first connection before its first command instead of failing; a PING on the fail-fast
    // client fails at once while Redis is unreachable.
    await this.redis.ping();
    const added = await this.queue.add(job.kind, job, { jobId: supportJobId(job) });
    await this.ack.confirm(queueKey(SUPPORT_QUEUE, added.id!));
    return added.id!;
  }
}
