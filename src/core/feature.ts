import type { Middleware } from 'koa';
import type { RouterMiddleware } from '@koa/router';
import type { ValuesOf, VariableTable } from './config/variables.js';
import type { BodyCharge } from './http/body.js';
import type { RelayState } from './http/context.js';
import type { Handling, RouteSpec } from './http/route-spec.js';
import type { RoleHandle } from './role.js';
import type { SignedRoute } from './signed-routes.js';

/** One endpoint: its declaration, mounted and documented from it, and what it runs, built from the app's `Deps`. */
export interface MountedRoute<Deps> {
  spec: RouteSpec<SignedRoute>;
  handling(deps: Deps): Handling;
}

/** A feature's variables, one entry each, and the group of the relay's configuration they shape. */
export interface FeatureConfig<Table extends VariableTable = VariableTable, Group = object> {
  variables: Table;
  settings(values: ValuesOf<Table>): Group;
}

/**
 * A feature's one face to the composition: its variables, its endpoints in the document's order, its part of the
 * worker role. `ApiDeps` and `WorkerDeps` are what the composition hands it; each feature names the part it reads.
 */
export interface Feature<ApiDeps, WorkerDeps = never> {
  config?: FeatureConfig;
  routes?: readonly MountedRoute<ApiDeps>[];
  worker?(deps: WorkerDeps): Promise<RoleHandle>;
}

/**
 * What a verified write stored, as its answer's payload (JSON text), found by the id the write went by; null
 * once it is gone (replaced or expired). `body` is the resend's, byte for byte the first request's; `params` its
 * path's.
 */
export type StoredAnswer = (
  body: Record<string, unknown>,
  writeId: string,
  params: Record<string, string>,
) => Promise<string | null>;

/**
 * The guards of a route: a write's body charged to the client's byte budget, its identity signature or session
 * token checked; a read's session token checked (`subject`: whose identity the path's `id` is).
 */
export interface WriteGuards {
  writeBudget: BodyCharge;
  signed(route: SignedRoute, stored: StoredAnswer): RouterMiddleware<RelayState>;
  sessionRead(subject: 'pair' | 'wallet'): Middleware<RelayState>;
}
