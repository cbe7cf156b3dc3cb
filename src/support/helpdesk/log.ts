import type { Logger } from '../../core/log.js';
import type { HelpdeskDriver } from './types.js';

/**
 * Development only: delivers nowhere. It logs that a ticket would have been created, with sizes but not the
 * contents (personal data never goes to logs); the job's hash in Redis holds the form for a developer to read.
 */
export function logDriver(log: Logger): HelpdeskDriver {
  return {
    name: 'log',
    async create(ticket, context) {
      log.info('ticket written to the log driver', {
        jobId: context.idempotencyKey,
        type: ticket.type,
        tags: ticket.tags,
        subjectChars: ticket.subject.length,
        descriptionChars: ticket.description.length,
      });
      return {};
    },
  };
}
