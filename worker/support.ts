import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Config } from '../src/core/config/config.js';
import type { Logger } from '../src/core/log.js';
import { logBullErrors } from '../src/core/queue/bull-errors.js';
import { queuePrefix } from '../src/core/queue/prefix.js';
import {
  createHelpdesk,
  HelpdeskError,
  SUPPORT_QUEUE,
  type Delivered,
  type HelpdeskTicket,
  type SupportJob,
} from '../src/support/index.js';
import { createRedis } from '../src/core/redis/clients.js';
import type { RoleHandle } from '../src/core/role.js';
import { releaseAtShutdown, runQueueWorker } from './bullmq.js';

/** Helpdesk calls wait on the network, not the CPU: a few at a time keep a burst of forms moving. */
const CONCURRENCY = 4;
/**
 * A ceiling on helpdesk calls per second for all workers together. BullMQ also honours a manual rate limit
 * (a helpdesk's 429) across workers only when the worker has a limiter.
 */
const LIMITER = { max: 10, duration: 1000 };

const TAG = 'multisig-relay';

/** A contact message becomes a question from the sender, with a subject naming them. */
function helpdeskTicket(job: SupportJob): HelpdeskTicket {
  if (job.kind === 'ticket') {
    const { subject, description, type, email } = job;
    return { subject, description, type, email, tags: [TAG, 'ticket'] };
  }
  return {
    subject: `Contact form: ${job.name}`,
    description: job.message,
    type: 'Question',
    email: job.email,
    name: job.name,
    tags: [TAG, 'contact'],
  };
}

/**
 * Delivers support jobs to the helpdesk. Failures map onto BullMQ's retry rules: transient ones (network,
 * timeout, 5xx) are retried with exponential backoff and jitter; a 429 pauses the queue for its Retry-After and
 * retries without spending an attempt; any other refusal fails the job at once, kept for operators.
 */
export async function startSupportWorker(config: Config, log: Logger): Promise<RoleHandle> {
  const { delivery } = config.support;
  const helpdesk = createHelpdesk(config.support, log);
  const redis = createRedis(config.redis.topology, 'worker');
  // Only for rateLimit(): the limit is stored in Redis and pauses every worker of the queue.
  const prefix = queuePrefix(config.keyPrefix, SUPPORT_QUEUE);
  const queue = new Queue<SupportJob>(SUPPORT_QUEUE, { connection: redis, prefix, skipVersionCheck: true });
  logBullErrors(queue, 'support queue', log);

  const deliver = async (job: Job<SupportJob, Delivered>, token?: string, signal?: AbortSignal) => {
    const fields = {
      jobId: job.id,
      kind: job.data.kind,
      provider: helpdesk.name,
      attempt: job.attemptsMade + 1,
    };
    try {
      const delivered = await helpdesk.create(helpdeskTicket(job.data), { idempotencyKey: job.id!, signal });
      log.info('support ticket delivered', { ...fields, ticketId: delivered.ticketId });
      return delivered;
    } catch (err) {
      if (signal?.aborted) throw await releaseAtShutdown(job, token, log, fields);
      if (!(err instanceof HelpdeskError)) throw err;
      if (err.kind === 'permanent') throw new UnrecoverableError(err.message);
      if (err.kind === 'rateLimited') {
        const waitMs = err.retryAfterMs ?? delivery.retryBaseMs;
        log.warn('helpdesk rate limit', { ...fields, waitMs });
        await queue.rateLimit(waitMs);
        throw Worker.RateLimitError();
      }
      throw err;
    }
  };

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
