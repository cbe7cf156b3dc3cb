import { createHash } from 'node:crypto';
import type { JobsOptions } from 'bullmq';
import type { DeliveryConfig } from './variables.js';
import { KEEP_FAILED_SECONDS } from '../core/queue/prefix.js';

/** BullMQ queue of the support forms; its keys are `<KEY_PREFIX>{bull:support}:support:…` (see queuePrefix). */
export const SUPPORT_QUEUE = 'support';

const TICKET_TYPES = ['Question', 'Incident', 'Problem', 'Feature Request'] as const;
export type TicketType = (typeof TICKET_TYPES)[number];

interface TicketJob {
  kind: 'ticket';
  subject: string;
  description: string;
  type: TicketType;
  email: string;
}

interface ContactJob {
  kind: 'contact';
  name: string;
  email: string;
  message: string;
}

/** A job's data: the validated, normalized form (personal data: it lives only in Redis, never in logs). */
export type SupportJob = TicketJob | ContactJob;

const DAY_SECONDS = 86_400;
/** Completed jobs are the dedupe record: a repeated submission finds its job id within this window. */
export const DEDUPE_SECONDS = DAY_SECONDS;

/** Anything outside the helpdesk's known types is filed as a question (docs/api.md#support-forms--post-v1ticket-post-v1contact). */
export function ticketType(type: string): TicketType {
  return (TICKET_TYPES as readonly string[]).includes(type) ? (type as TicketType) : 'Question';
}

/** Same text however the client encoded it: NFC, Unix line ends, no surrounding whitespace. */
export function normalizeText(text: string): string {
  return text.normalize('NFC').replace(/\r\n?/g, '\n').trim();
}

/**
 * The job id is a hash of the kind and the normalized content, so the same submission repeated within the
 * dedupe window maps to the job that already exists and makes one ticket. Hex and `-` only: BullMQ ids may
 * not contain `:`.
 */
export function supportJobId(job: SupportJob): string {
  const fields =
    job.kind === 'ticket'
      ? [job.kind, job.subject, job.description, job.type, job.email]
      : [job.kind, job.name, job.email, job.message];
  return `${job.kind}-${createHash('sha256').update(JSON.stringify(fields)).digest('hex')}`;
}

/** Set on every job when it is added: BullMQ reads retries and retention from the job itself. */
export function supportJobOptions(delivery: DeliveryConfig): JobsOptions {
  return {
    attempts: delivery.maxAttempts,
    backoff: { type: 'exponential', delay: delivery.retryBaseMs, jitter: 0.5 },
    removeOnComplete: { age: DEDUPE_SECONDS },
    removeOnFail: { age: KEEP_FAILED_SECONDS },
  };
}
