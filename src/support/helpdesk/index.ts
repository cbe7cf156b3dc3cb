import type { SupportConfig } from '../variables.js';
import type { Logger } from '../../core/log.js';
import { freshdesk } from './freshdesk.js';
import { logDriver } from './log.js';
import type { HelpdeskDriver } from './types.js';
import { webhook } from './webhook.js';
import { zendesk } from './zendesk.js';

export type { Delivered, HelpdeskDriver, HelpdeskTicket } from './types.js';
export { HelpdeskError } from './types.js';

/** The driver named by HELPDESK_PROVIDER (loadConfig has checked that its settings are present). */
export function createHelpdesk(support: SupportConfig, log: Logger): HelpdeskDriver {
  const { timeoutMs } = support.delivery;
  switch (support.provider) {
    case 'freshdesk':
      return freshdesk(support.freshdesk.url!, support.freshdesk.apiKey!, timeoutMs);
    case 'zendesk':
      return zendesk(support.zendesk.url!, support.zendesk.email!, support.zendesk.apiToken!, timeoutMs);
    case 'webhook':
      return webhook(support.webhook.url!, support.webhook.secret!, timeoutMs);
    case 'log':
      return logDriver(log);
  }
}
