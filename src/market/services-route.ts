import type Router from '@koa/router';
import { ok, type RelayState } from '../core/http/context.js';

/** Which third-party features the apps should show: straight from the SERVICES configuration. */
export function servicesRoutes(router: Router<RelayState>, services: Record<string, unknown>): void {
  router.get('/v1/services', (ctx) => ok(ctx, services));
}
