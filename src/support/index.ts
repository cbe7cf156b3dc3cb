export { deliverSupport, type SupportDeliveryParts } from './delivery.js';
export { DEDUPE_SECONDS, SUPPORT_QUEUE, supportJobId, supportJobOptions, type SupportJob } from './jobs.js';
export { supportRoutes } from './routes.js';
export { contactBody, ticketBody } from './schema.js';
