import { Queue, Worker, type Job } from 'bullmq';
import type { CoreConfig } from '../core/config/config.js';
import type { SupportConfig } from './variables.js';
import type { Logger } from '../core/log.js';
import { logBullErrors } from '../core/queue/bull-errors.js';
import { queuePrefix } from '../core/queue/prefix.js';
import { deliveryProcessor, runQueueWorker } from '../core/queue/worker.js';
import { createRedis } from '../core/redis/clients.js';
import type { RoleHandle } from '../core/role.js';
import { deliverSupport } from './delivery.js';
import { createHelpdesk, type Delivered } from './helpdesk/index.js';
import { SUPPORT_QUEUE, type SupportJob } from './jobs.js';

/** Helpdesk calls wait on the network, not the CPU: a few at a time keep a burst of forms moving. */
const CONCURRENCY = 4;
/**
 * A ceiling on helpdesk calls per second for all workers together. BullMQ also honours a manual rate limit
 * (a helpdesk's 429) across workers only when the worker has a limiter.
 */
const LIMITER = { max: 10, duration: 1000 };

export interface SupportWorkerDeps {
  config: CoreConfig & { support: SupportConfig };
  log: Logger;
}

/** The support queue's worker over deliverSupport. */
export async function startSupportWorker({ config, log }: SupportWorkerDeps): Promise<RoleHandle> {
  const { delivery } = config.support;
  const helpdesk = createHelpdesk(config.support, log);
  const redis = createRedis(config.redis.topology, 'worker');
  // Only for rateLimit(): the limit is stored in Redis and pauses every worker of the queue.
  const prefix = queuePrefix(config.keyPrefix, SUPPORT_QUEUE);
  const queue = new Queue<SupportJob>(SUPPORT_QUEUE, { connection: redis, prefix, skipVersionCheck: true });
  logBullErrors(queue, 'support queue', log);

  const parts = { helpdesk, retryBaseMs: delivery.retryBaseMs, log };
  const deliver = deliveryProcessor(queue, log, (job: Job<SupportJob, Delivered>, signal) =>
    deliverSupport(parts, job, signal),
  );

  const worker = new Worker<SupportJob, Delivered>(SUPPORT_QUEUE, deliver, {
    connection: redis,
    prefix,
    concurrency: CONCURRENCY,
    limiter: LIMITER,
    lockDuration: delivery.lockMs,
    stalledInterval: delivery.stalledCheckMs,
  });
  log.info('support worker started', { queue: SUPPORT_QUEUE, provider: helpdesk.name });
  if (helpdesk.name === 'log') log.warn('HELPDESK_PROVIDER=log: support forms reach no helpdesk');
  return runQueueWorker(
    {
      worker,
      queue,
      describe: (job) => ({ kind: job.data.kind }),
      connections: [redis],
      graceMs: config.shutdownTimeoutMs,
    },
    log,
  );
}
