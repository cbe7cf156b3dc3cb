import type { DeliveryConfig } from './variables.js';
import type { Logger } from '../core/log.js';
import { JobProducer } from '../core/queue/producer.js';
import { queueKey } from '../core/queue/prefix.js';
import type { RedisClient } from '../core/redis/clients.js';
import type { Keys } from '../core/redis/keys.js';
import type { WriteAck } from '../core/redis/write-ack.js';
import { DEDUPE_SECONDS, SUPPORT_QUEUE, supportJobId, supportJobOptions, type SupportJob } from './jobs.js';

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
