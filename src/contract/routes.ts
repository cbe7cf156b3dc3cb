import type Router from '@koa/router';
import type { RelayState } from '../core/http/context.js';
import { mount, type RouteSpec } from '../core/http/route-spec.js';

export const openApiRead = {
  method: 'get',
  path: '/v1/openapi.json',
  summary: 'This document (not enveloped)',
  doc: 'machine-readable-contract',
  data: 'OpenApiDocument',
  errors: [],
} satisfies RouteSpec;

/**
 * The machine-readable contract of the profile the relay runs (`openApi`, see document.ts), generated once at
 * start-up from the schemas the routes validate with.
 */
export function openApiRoutes(router: Router<RelayState>, openApi: Record<string, unknown>): void {
  const text = JSON.stringify(openApi);
  mount(router, openApiRead, (ctx) => {
    ctx.set('Content-Type', 'application/json; charset=utf-8');
    ctx.body = text;
  });
}
