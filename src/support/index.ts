import type { Feature } from '../core/feature.js';
import { supportForms, type SupportDeps } from './routes.js';
import { startSupportWorker } from './worker.js';

export { deliverSupport, type SupportDeliveryParts } from './delivery.js';
export { createHelpdesk, HelpdeskError, type Delivered, type HelpdeskTicket } from './helpdesk/index.js';
export { SUPPORT_QUEUE, type SupportJob } from './jobs.js';
export { SupportProducer } from './producer.js';
export { contactBody, ticketBody } from './schema.js';

/** Support forms queued for the helpdesk, and the worker part that delivers them. */
export const support: Feature<SupportDeps, Parameters<typeof startSupportWorker>[0]> = {
  name: 'support',
  routes: supportForms,
  worker: startSupportWorker,
};
