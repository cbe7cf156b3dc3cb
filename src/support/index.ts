export { deliverSupport, type SupportDeliveryParts } from './delivery.js';
export { createHelpdesk, HelpdeskError, type Delivered, type HelpdeskTicket } from './helpdesk/index.js';
export { SUPPORT_QUEUE, type SupportJob } from './jobs.js';
export { SupportProducer } from './producer.js';
export { contactRoute, supportRoutes, ticketRoute } from './routes.js';
export { contactBody, ticketBody } from './schema.js';
export { SUPPORT_VARIABLES as variables, supportSettings as settings } from './variables.js';
