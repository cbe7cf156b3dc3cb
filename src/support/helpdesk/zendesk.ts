import type { TicketType } from '../jobs.js';
import { basicAuth, idAt, postJson } from './http.js';
import type { HelpdeskDriver } from './types.js';

/** Zendesk has no feature-request type: such tickets are questions tagged `feature_request`. */
const ZENDESK_TYPE: Record<TicketType, { type: string; tag?: string }> = {
  Question: { type: 'question' },
  Incident: { type: 'incident' },
  Problem: { type: 'problem' },
  'Feature Request': { type: 'question', tag: 'feature_request' },
};

/**
 * `POST {url}/api/v2/tickets.json` with API-token auth (`{email}/token:{token}`). The job id is the
 * `Idempotency-Key`, so a retry after a lost answer (or a killed worker) does not open a second ticket.
 */
export function zendesk(url: string, email: string, apiToken: string, timeoutMs: number): HelpdeskDriver {
  return {
    name: 'zendesk',
    async create(ticket, context) {
      const { type, tag } = ZENDESK_TYPE[ticket.type];
      const body = {
        ticket: {
          subject: ticket.subject,
          comment: { body: ticket.description },
          requester: { email: ticket.email, name: ticket.name ?? ticket.email },
          type,
          tags: tag ? [...ticket.tags, tag] : ticket.tags,
        },
      };
      const answer = await postJson(
        `${url}/api/v2/tickets.json`,
        JSON.stringify(body),
        { authorization: basicAuth(`${email}/token`, apiToken), 'idempotency-key': context.idempotencyKey },
        timeoutMs,
        context,
      );
      return { ticketId: idAt(answer, 'ticket', 'id') };
    },
  };
}
