import { createHmac } from 'node:crypto';
import { idAt, postJson } from './http.js';
import type { HelpdeskDriver } from './types.js';

/** `X-Relay-Signature: sha256=<hex HMAC-SHA256 of the exact body bytes with the shared secret>`. */
function webhookSignature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

/**
 * A generic JSON POST for any receiver. `id` (the job id) is stable across retries so the receiver can drop
 * repeats; the answer may carry `{ "id": … }`, recorded as the ticket id.
 */
export function webhook(url: string, secret: string, timeoutMs: number): HelpdeskDriver {
  return {
    name: 'webhook',
    async create(ticket, context) {
      const body = JSON.stringify({ id: context.idempotencyKey, ...ticket });
      const answer = await postJson(
        url,
        body,
        { 'x-relay-signature': webhookSignature(secret, body) },
        timeoutMs,
        context,
      );
      return { ticketId: idAt(answer, 'id') };
    },
  };
}
