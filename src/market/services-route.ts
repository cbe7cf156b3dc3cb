import type Router from '@koa/router';
import { ok, type RelayState } from '../core/http/context.js';
import { mount, type RouteSpec } from '../core/http/route-spec.js';

export const servicesRead = {
  method: 'get',
  path: '/v1/services',
  summary: 'Which third-party features the apps should show',
  doc: 'get-v1services',
  data: 'Services',
  bareForApps: true,
  errors: [],
} satisfies RouteSpec;

/** Which third-party features the apps should show: straight from the SERVICES configuration. */
export function servicesRoutes(router: Router<RelayState>, services: Record<string, unknown>): void {
  mount(router, servicesRead, (ctx) => ok(ctx, services));
}
