export { partnerRegistry } from './partners.js';
export { signRoute, signRoutes } from './routes.js';
export { signBody } from './schema.js';
export { PARTNERS_VARIABLES as variables, partnersSettings as settings } from './variables.js';
