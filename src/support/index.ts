export { DEDUPE_SECONDS, SUPPORT_QUEUE, supportJobId, supportJobOptions, type SupportJob } from './jobs.js';
export { contactRoute, supportRoutes, ticketRoute } from './routes.js';
export { contactBody, ticketBody } from './schema.js';
