import { basicAuth, idAt, postJson } from './http.js';
import type { HelpdeskDriver } from './types.js';

// Freshdesk's fixed codes: status 2 = Open, source 2 = Portal, priority 1 = Low.
const OPEN = 2;
const PORTAL = 2;
const LOW = 1;

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Freshdesk renders `description` as HTML: the sender's text is escaped so it shows as written. */
function textToHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!).replace(/\n/g, '<br>');
}

/** `POST {url}/api/v2/tickets` with HTTP Basic `apikey:X`. */
export function freshdesk(url: string, apiKey: string, timeoutMs: number): HelpdeskDriver {
  return {
    name: 'freshdesk',
    async create(ticket, context) {
      const body = {
        subject: ticket.subject,
        description: textToHtml(ticket.description),
        email: ticket.email,
        ...(ticket.name !== undefined ? { name: ticket.name } : {}),
        type: ticket.type,
        status: OPEN,
        source: PORTAL,
        priority: LOW,
        tags: ticket.tags,
      };
      const answer = await postJson(
        `${url}/api/v2/tickets`,
        JSON.stringify(body),
        { authorization: basicAuth(apiKey, 'X') },
        timeoutMs,
        context,
      );
      return { ticketId: idAt(answer, 'id') };
    },
  };
}
