export { partnerRegistry } from './partners.js';
export { signRoute, signRoutes } from './routes.js';
export { signBody } from './schema.js';
