import { UnrecoverableError, WaitingError, Worker, type Job, type Queue } from 'bullmq';
import { errorFields, type LogFields, type Logger } from '../log.js';
import type { DeliveryAttempt } from './attempt.js';
import { logBullErrors } from './bull-errors.js';
import { instrumentWorker, watchQueueDepth } from '../metrics.js';
import type { RedisClient } from '../redis/clients.js';
import { RELEASE_MS, settlesWithin, type RoleHandle } from '../role.js';

const SHUTDOWN = 'worker shutting down';

/** One line per worker error (not lost connections), stall and failed attempt, with the job's id and `describe`'s fields (no data). */
function logWorkerEvents<T>(worker: Worker<T>, log: Logger, describe: (job: Job<T>) => LogFields): void {
  const name = worker.name;
  logBullErrors(worker, `${name} worker`, log);
  worker.on('stalled', (jobId) => log.warn(`${name} job stalled; it goes back to the queue`, { jobId }));
  worker.on('failed', (job, err) => {
    const attempts = job?.opts.attempts ?? 1;
    const final = err instanceof UnrecoverableError || (job?.attemptsMade ?? 0) >= attempts;
    log.warn(final ? `${name} job failed for good` : `${name} job failed; will retry`, {
      jobId: job?.id,
      ...(job ? describe(job) : {}),
      attemptsMade: job?.attemptsMade,
      attempts,
      ...errorFields(err),
    });
  });
}

/** Shutdown: gives the job back untouched (no attempt spent) for another worker. */
async function releaseAtShutdown(job: Job, token: string | undefined, log: Logger, fields: LogFields) {
  await job.moveToWait(token);
  log.warn(`${job.queueName} job released at shutdown`, fields);
  return new WaitingError();
}

/**
 * The processor over a feature's delivery: a release at shutdown gives the job back, a rate limit pauses `queue`
 * (every worker of it) and puts the job back to wait without spending an attempt.
 */
export function deliveryProcessor<T, R>(
  queue: Queue<T>,
  log: Logger,
  deliver: (job: Job<T, R>, signal?: AbortSignal) => Promise<DeliveryAttempt<R>>,
) {
  return async (job: Job<T, R>, token?: string, signal?: AbortSignal): Promise<R> => {
    const attempt = await deliver(job, signal);
    if ('released' in attempt) throw await releaseAtShutdown(job, token, log, attempt.released);
    if ('rateLimitedMs' in attempt) {
      await queue.rateLimit(attempt.rateLimitedMs);
      throw Worker.RateLimitError();
    }
    return attempt.result;
  };
}

/**
 * Stops taking jobs and lets the active ones finish; past the grace period aborts them so each returns to the
 * queue. False when even that did not end in time (Redis gone): their locks expire and another worker recovers
 * them as stalled. The caller must then leave the worker's connection to the exiting process: closing it under a
 * running BullMQ worker makes it retry in a tight loop (it skips its retry delay while closing).
 */
async function closeWorker(worker: Worker, graceMs: number, log: Logger): Promise<boolean> {
  const abort = setTimeout(() => worker.cancelAllJobs(SHUTDOWN), graceMs);
  const closed = await settlesWithin(worker.close(), graceMs + RELEASE_MS);
  clearTimeout(abort);
  if (!closed) log.warn(`${worker.name} worker did not close in time`);
  return closed;
}

export interface QueueWorkerParts<T> {
  worker: Worker<T>;
  /** The queue handle the worker's processor uses (rate limits, depth metric); closed after the worker. */
  queue: Queue<T>;
  /** Fields of a job for its log lines (never its data). */
  describe: (job: Job<T>) => LogFields;
  /** Every Redis connection the worker's parts opened, dropped once the worker closed. */
  connections: RedisClient[];
  graceMs: number;
}

/**
 * Logging, metrics and the bounded shutdown every queue worker shares. Nothing here waits for Redis: with Redis
 * down the worker waits for it on its own, and start-up (the metrics listener's /healthz, a SIGTERM) must not.
 */
export function runQueueWorker<T>(parts: QueueWorkerParts<T>, log: Logger): RoleHandle {
  const { worker, queue } = parts;
  logWorkerEvents(worker, log, parts.describe);
  instrumentWorker(worker);
  const unwatch = watchQueueDepth([queue]);
  return {
    async stop() {
      const closed = await closeWorker(worker, parts.graceMs, log);
      unwatch();
      if (!closed) return;
      await settlesWithin(queue.close(), RELEASE_MS);
      for (const connection of parts.connections) connection.disconnect();
      log.info(`${worker.name} worker stopped`);
    },
  };
}
