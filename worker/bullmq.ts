import { UnrecoverableError, WaitingError, type Job, type Worker } from 'bullmq';
import { errorFields, type LogFields, type Logger } from '../src/log.js';
import { logBullErrors } from '../src/queue/bull-errors.js';
import { settlesWithin } from '../src/role.js';

/** After the grace period the active jobs are aborted; this long is left for releasing them. */
export const RELEASE_MS = 2000;
const SHUTDOWN = 'worker shutting down';

/** One line per worker error (not lost connections), stall and failed attempt, with the job's id and `describe`'s fields (no data). */
export function logWorkerEvents<T>(
  worker: Worker<T>,
  log: Logger,
  describe: (job: Job<T>) => LogFields,
): void {
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
export async function releaseAtShutdown(job: Job, token: string | undefined, log: Logger, fields: LogFields) {
  await job.moveToWait(token);
  log.warn(`${job.queueName} job released at shutdown`, fields);
  return new WaitingError();
}

/**
 * Stops taking jobs and lets the active ones finish; past the grace period aborts them so each returns to the
 * queue. False when even that did not end in time (Redis gone): their locks expire and another worker recovers
 * them as stalled. The caller must then leave the worker's connection to the exiting process: closing it under a
 * running BullMQ worker makes it retry in a tight loop (it skips its retry delay while closing).
 */
export async function closeWorker(worker: Worker, graceMs: number, log: Logger): Promise<boolean> {
  const abort = setTimeout(() => worker.cancelAllJobs(SHUTDOWN), graceMs);
  const closed = await settlesWithin(worker.close(), graceMs + RELEASE_MS);
  clearTimeout(abort);
  if (!closed) log.warn(`${worker.name} worker did not close in time`);
  return closed;
}
