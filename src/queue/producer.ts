import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { DeliveryConfig } from '../config.js';
import type { Logger } from '../log.js';
import { logBullErrors } from './bull-errors.js';
import type { Keys } from '../store/keys.js';
import {
  DEDUPE_SECONDS,
  SUPPORT_QUEUE,
  supportJobId,
  supportJobOptions,
  type SupportJob,
} from './support-jobs.js';

/**
 * Adds support jobs on a fail-fast client (no offline queue, command timeout): `submit` resolves only once
 * Redis has the job, and rejects with a Redis connection error (→ 503) otherwise.
 */
export class SupportProducer {
  private readonly queue: Queue<SupportJob>;

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    delivery: DeliveryConfig,
    log: Logger,
  ) {
    // skipVersionCheck: the producer's only start-up command would be INFO, and a failure there would leave the
    // Queue broken for good; the worker checks the Redis version.
    this.queue = new Queue<SupportJob>(SUPPORT_QUEUE, {
      connection: redis,
      skipVersionCheck: true,
      defaultJobOptions: supportJobOptions(delivery),
    });
    logBullErrors(this.queue, 'support queue', log);
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
    try {
      const added = await this.queue.add(job.kind, job, { jobId });
      return added.id!;
    } catch (err) {
      if (first) await Promise.allSettled([refund(), this.redis.del(marker)]);
      throw err;
    }
  }
}
