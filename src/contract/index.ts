export { buildAsyncApi } from './asyncapi.js';
export { bareRoutes, buildOpenApi, ROUTES } from './document.js';
export { contractRoutes } from './routes.js';
