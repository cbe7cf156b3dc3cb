import { int, oneOf, string, url } from '../core/config/parsers.js';
import { API, WORKER, optional, variable, type ValuesOf } from '../core/config/variables.js';

/** The support forms' variables: their budget, the helpdesk and how the worker delivers to it. */
export const SUPPORT_VARIABLES = {
  SUBMISSIONS_PER_DAY: variable(int(1, 1_000_000), 10, {
    roles: API,
    doc: 'per-IP budget of the support forms (ticket and contact submissions), per day',
  }),
  HELPDESK_PROVIDER: variable(oneOf(['freshdesk', 'zendesk', 'webhook', 'log']), 'log', {
    roles: WORKER,
    doc: '`freshdesk`, `zendesk`, `webhook` or `log` (development: the worker logs ids and sizes only)',
  }),
  FRESHDESK_URL: optional(url(), {
    roles: WORKER,
    requiredWhen: ['HELPDESK_PROVIDER', 'freshdesk'],
    doc: 'Freshdesk (required when it is the provider, on the roles that deliver: worker, all)',
  }),
  FRESHDESK_API_KEY: optional(string, { roles: WORKER, requiredWhen: ['HELPDESK_PROVIDER', 'freshdesk'] }),
  ZENDESK_URL: optional(url(), {
    roles: WORKER,
    requiredWhen: ['HELPDESK_PROVIDER', 'zendesk'],
    doc: 'Zendesk (required when it is the provider)',
  }),
  ZENDESK_EMAIL: optional(string, { roles: WORKER, requiredWhen: ['HELPDESK_PROVIDER', 'zendesk'] }),
  ZENDESK_API_TOKEN: optional(string, { roles: WORKER, requiredWhen: ['HELPDESK_PROVIDER', 'zendesk'] }),
  HELPDESK_WEBHOOK_URL: optional(url(), {
    roles: WORKER,
    requiredWhen: ['HELPDESK_PROVIDER', 'webhook'],
    doc: 'generic JSON webhook, signed with HMAC-SHA256 in `X-Relay-Signature`',
  }),
  HELPDESK_WEBHOOK_SECRET: optional(string, {
    roles: WORKER,
    requiredWhen: ['HELPDESK_PROVIDER', 'webhook'],
  }),
  HELPDESK_TIMEOUT_MS: variable(int(100, 120_000), 10_000, {
    roles: WORKER,
    doc: 'one helpdesk call (worker)',
  }),
  HELPDESK_RETRY_BASE_MS: variable(int(10, 3_600_000), 5_000, {
    roles: API,
    doc: 'exponential backoff base and attempts; stored on each job, so set them on the API pods',
  }),
  HELPDESK_MAX_ATTEMPTS: variable(int(1, 100), 12, { roles: API }),
  HELPDESK_LOCK_MS: variable(int(500, 600_000), 30_000, {
    roles: WORKER,
    doc: "BullMQ job lock and stalled-job check: how soon a crashed worker's job is taken over",
  }),
  HELPDESK_STALLED_CHECK_MS: variable(int(100, 600_000), 30_000, { roles: WORKER }),
};

export function supportSettings(v: ValuesOf<typeof SUPPORT_VARIABLES>) {
  return {
    support: {
      submissionsPerDay: v.SUBMISSIONS_PER_DAY,
      provider: v.HELPDESK_PROVIDER,
      freshdesk: { url: v.FRESHDESK_URL, apiKey: v.FRESHDESK_API_KEY },
      zendesk: { url: v.ZENDESK_URL, email: v.ZENDESK_EMAIL, apiToken: v.ZENDESK_API_TOKEN },
      webhook: { url: v.HELPDESK_WEBHOOK_URL, secret: v.HELPDESK_WEBHOOK_SECRET },
      /** How the worker delivers support jobs; small values let tests exercise retries and stalls in seconds. */
      delivery: {
        timeoutMs: v.HELPDESK_TIMEOUT_MS,
        retryBaseMs: v.HELPDESK_RETRY_BASE_MS,
        maxAttempts: v.HELPDESK_MAX_ATTEMPTS,
        lockMs: v.HELPDESK_LOCK_MS,
        stalledCheckMs: v.HELPDESK_STALLED_CHECK_MS,
      },
    },
  };
}

export type SupportConfig = ReturnType<typeof supportSettings>['support'];
export type DeliveryConfig = SupportConfig['delivery'];
