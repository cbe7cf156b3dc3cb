import { UnrecoverableError, type Job } from 'bullmq';
import type { Logger } from '../core/log.js';
import type { DeliveryAttempt } from '../core/queue/attempt.js';
import { HelpdeskError, type Delivered, type HelpdeskDriver, type HelpdeskTicket } from './helpdesk/index.js';
import type { SupportJob } from './jobs.js';

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

/** What a support delivery sends through, and where it logs. */
export interface SupportDeliveryParts {
  helpdesk: HelpdeskDriver;
  /** The queue's pause after a 429 that named none (HELPDESK_RETRY_BASE_MS). */
  retryBaseMs: number;
  log: Logger;
}

/**
 * Delivers a support job to the helpdesk. Failures map onto BullMQ's retry rules: transient ones (network,
 * timeout, 5xx) are retried with exponential backoff and jitter; a 429 pauses the queue for its Retry-After and
 * retries without spending an attempt; any other refusal fails the job at once, kept for operators.
 */
export async function deliverSupport(
  parts: SupportDeliveryParts,
  job: Job<SupportJob, Delivered>,
  signal?: AbortSignal,
): Promise<DeliveryAttempt<Delivered>> {
  const { helpdesk, log } = parts;
  const fields = {
    jobId: job.id,
    kind: job.data.kind,
    provider: helpdesk.name,
    attempt: job.attemptsMade + 1,
  };
  try {
    const delivered = await helpdesk.create(helpdeskTicket(job.data), { idempotencyKey: job.id!, signal });
    log.info('support ticket delivered', { ...fields, ticketId: delivered.ticketId });
    return { result: delivered };
  } catch (err) {
    if (signal?.aborted) return { released: fields };
    if (!(err instanceof HelpdeskError)) throw err;
    if (err.kind === 'permanent') throw new UnrecoverableError(err.message);
    if (err.kind === 'rateLimited') {
      const waitMs = err.retryAfterMs ?? parts.retryBaseMs;
      log.warn('helpdesk rate limit', { ...fields, waitMs });
      return { rateLimitedMs: waitMs };
    }
    throw err;
  }
}
