export { buildAsyncApi } from './asyncapi.js';
export { bareRoutes } from './document.js';
export { openApiRoutes } from './routes.js';
