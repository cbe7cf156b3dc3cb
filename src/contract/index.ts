import type { Feature } from '../core/feature.js';
import { buildAsyncApi } from './asyncapi.js';
import { buildOpenApi } from './document.js';
import { asyncApiRead, openApiRead, serve, type ContractDeps } from './routes.js';

export { buildAsyncApi } from './asyncapi.js';
export { bareRoutes } from './document.js';

/** The machine-readable contracts, built from the schemas the routes validate with (document.ts) and the events (asyncapi.ts). */
export const contract = {
  routes: [
    { spec: openApiRead, handling: ({ specs, config }) => serve(buildOpenApi(specs, config.apiProfile)) },
    { spec: asyncApiRead, handling: () => serve(buildAsyncApi()) },
  ],
} satisfies Feature<ContractDeps>;
