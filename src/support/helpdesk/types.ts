import type { TicketType } from '../jobs.js';

/** What every helpdesk receives, whichever form it came from. */
export interface HelpdeskTicket {
  subject: string;
  /** Plain text as the sender wrote it. */
  description: string;
  type: TicketType;
  /** The requester. */
  email: string;
  name?: string;
  tags: string[];
}

export interface DeliveryContext {
  /** Stable across retries of one submission (the job id), for helpdesks that deduplicate. */
  idempotencyKey: string;
  /** Aborts the request (worker shutdown). */
  signal?: AbortSignal;
}

export interface Delivered {
  /** The helpdesk's ticket id, when it returns one: lets operators find the ticket from the job. */
  ticketId?: string;
}

export interface HelpdeskDriver {
  readonly name: string;
  create(ticket: HelpdeskTicket, context: DeliveryContext): Promise<Delivered>;
}

/**
 * How a delivery failed, in terms the worker acts on: `transient` is retried with backoff, `rateLimited` is
 * retried after `retryAfterMs` without spending an attempt, `permanent` is not retried. The message names the
 * status or error code only, never the helpdesk's answer (it may echo the ticket).
 */
export class HelpdeskError extends Error {
  override name = 'HelpdeskError';
  constructor(
    readonly kind: 'transient' | 'rateLimited' | 'permanent',
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}
