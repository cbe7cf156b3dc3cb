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

export const asyncApiRead = {
  method: 'get',
  path: '/v1/asyncapi.json',
  summary: 'The AsyncAPI 3.0 document of the socket.io events, docs/asyncapi.yaml as JSON (not enveloped)',
  doc: 'machine-readable-contract',
  data: 'AsyncApiDocument',
  errors: [],
} satisfies RouteSpec;

/** The machine-readable contracts, each generated once at start-up: OpenAPI of the profile the relay runs, AsyncAPI. */
export interface ContractDocuments {
  openApi: Record<string, unknown>;
  asyncApi: Record<string, unknown>;
}

/** Answers `document` as it is: a JSON value serialized once. */
function serve(router: Router<RelayState>, spec: RouteSpec, document: Record<string, unknown>): void {
  const text = JSON.stringify(document);
  mount(router, spec, (ctx) => {
    ctx.set('Content-Type', 'application/json; charset=utf-8');
    ctx.body = text;
  });
}

/** The documents built from the schemas the routes validate with (document.ts) and the events (asyncapi.ts). */
export function contractRoutes(router: Router<RelayState>, documents: ContractDocuments): void {
  serve(router, openApiRead, documents.openApi);
  serve(router, asyncApiRead, documents.asyncApi);
}
