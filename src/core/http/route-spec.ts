import type Router from '@koa/router';
import type { RouterMiddleware } from '@koa/router';
import type { ErrorCode } from '../errors.js';
import { type BodyCharge, jsonBody } from './body.js';
import type { RelayState } from './context.js';

type Schema = Record<string, unknown>;

/**
 * One endpoint, declared once beside its handler: the router mounts it from this, and the OpenAPI document
 * (src/contract/document.ts) describes it from this. `Signed` names the signing purposes (see src/identity).
 */
export interface RouteSpec<Signed extends string = never> {
  method: 'get' | 'post';
  /** OpenAPI path template (`/v1/sync/{id}`); the router's spelling is `koaPath`'s. */
  path: string;
  summary: string;
  /** The docs/api.md heading that explains it. */
  doc: string;
  /** Path parameters: an object schema whose properties are the parameters. */
  params?: { properties: Schema };
  body?: {
    /** Component name of the request body in the OpenAPI document. */
    component: string;
    /** The schema the handler validates the body with. */
    schema: object;
    limitBytes: number;
    /** Fields where `""` or `null` count as absent. */
    emptyAsAbsent?: readonly string[];
    /** Unknown fields are refused, not dropped: the body is documented exactly as validated. */
    exact?: true;
    /** The handler reads the body itself, once it knows the request can be answered; `mount` reads none. */
    readByHandler?: true;
  };
  /** Component name of `data` in the success answer. */
  data: string;
  /**
   * Query parameters that select another answer: an object schema whose properties are the parameters (as the
   * URL carries them, text), and the component of `data` when they are given.
   */
  query?: { schema: { properties: Schema }; data: string; description: string };
  /** Under API_PROFILE=ssp-apps the answer is `data` alone: the released apps read it off the body. */
  bareForApps?: true;
  /** Under API_PROFILE=ssp-apps the body may also be form or text `key=value&key=value`. */
  queryStringForApps?: true;
  /** Error codes of this endpoint beyond those every endpoint of its kind can answer. */
  errors: readonly ErrorCode[];
  /** A write an app may sign: the route whose purpose word and mode apply (docs/api.md#identity-signed-requests). */
  signedAs?: Signed;
  /**
   * Accepts a session token (`Authorization: Bearer`, docs/api.md#sessions): `read`, a read AUTH_READS governs
   * (its 401s carry `WWW-Authenticate: Bearer`); `write`, a write it may authenticate.
   */
  bearer?: 'read' | 'write';
  /** A record read that consumes the global rate limit inside its own Redis script (`ctx.state.limit`). */
  consumesLimitInScript?: true;
  /**
   * A 200 carries an `ETag` (and `Cache-Control: no-cache`); a request whose `If-None-Match` names it is
   * answered 304 without a body (src/core/http/conditional.ts).
   */
  conditional?: true;
}

/** The router's spelling of a route's path: `/v1/sync/:id`. */
export function koaPath(spec: RouteSpec<string>): string {
  return spec.path.replace(/\{(\w+)\}/g, ':$1');
}

/** What an endpoint runs: its body's size charged to `charge` whether or not it is refused, `guards` in order, `handler`. */
export interface Handling {
  charge?: BodyCharge;
  guards?: RouterMiddleware<RelayState>[];
  handler: RouterMiddleware<RelayState>;
}

/** Mounts `spec`: its JSON body first (unless the handler reads it), then its guards and handler. */
export function mount(router: Router<RelayState>, spec: RouteSpec<string>, handling: Handling): void {
  const body = spec.body?.readByHandler ? undefined : spec.body;
  const middleware = [...(handling.guards ?? []), handling.handler];
  const chain = body ? [jsonBody(body.limitBytes, handling.charge), ...middleware] : middleware;
  router[spec.method](koaPath(spec), ...chain);
}
