import type Router from '@koa/router';
import type { ApiProfile } from '../core/config/config.js';
import type { RelayState } from '../core/http/context.js';
import { buildOpenApi } from './document.js';

/**
 * The machine-readable contract of the profile the relay runs, generated once at start-up from the schemas the
 * routes validate with.
 */
export function openApiRoutes(router: Router<RelayState>, profile: ApiProfile): void {
  const document = JSON.stringify(buildOpenApi(profile));
  router.get('/v1/openapi.json', (ctx) => {
    ctx.set('Content-Type', 'application/json; charset=utf-8');
    ctx.body = document;
  });
}
