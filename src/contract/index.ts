export { buildAsyncApi } from './asyncapi.js';
export { bareRoutes, ROUTES } from './document.js';
export { openApiRoutes } from './routes.js';
