export { partnerRegistry } from './partners.js';
export { signRoutes } from './routes.js';
export { signBody } from './schema.js';
