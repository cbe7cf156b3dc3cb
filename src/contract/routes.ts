import type { ApiProfile } from '../core/config/config.js';
import type { RelayContext } from '../core/http/context.js';
import type { RouteSpec } from '../core/http/route-spec.js';
import type { SignedRoute } from '../core/signed-routes.js';

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

/** What the contract documents: every endpoint the app mounts, in order, and the profile it runs. */
export interface ContractDeps {
  config: { apiProfile: ApiProfile };
  specs: readonly RouteSpec<SignedRoute>[];
}

/** Answers `document` as it is: a JSON value serialized once, at start-up. */
export function serve(document: Record<string, unknown>) {
  const text = JSON.stringify(document);
  return {
    handler: (ctx: RelayContext) => {
      ctx.set('Content-Type', 'application/json; charset=utf-8');
      ctx.body = text;
    },
  };
}
