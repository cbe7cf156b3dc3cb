import { contract } from './contract/index.js';
import { health } from './core/http/health-route.js';
import type { RouteSpec } from './core/http/route-spec.js';
import type { SignedRoute } from './core/signed-routes.js';
import { identity } from './identity/index.js';
import { mailbox } from './mailbox/index.js';
import { market } from './market/index.js';
import { pairing } from './pairing/index.js';
import { partners } from './partners/index.js';
import { push } from './push/index.js';
import { realtime } from './realtime/index.js';
import { support } from './support/index.js';

/**
 * Every feature, in the order the config reads their variables, the app mounts and documents their endpoints and
 * the worker starts their parts. Each keeps its own type: the relay's `Config` is the union of their groups.
 */
export const FEATURES = [
  pairing,
  mailbox,
  realtime,
  push,
  market,
  partners,
  identity,
  support,
  contract,
  health,
] as const;

/** Every endpoint the app mounts, in order: what the OpenAPI document and the rate limiter read. */
export const API_ROUTES: readonly RouteSpec<SignedRoute>[] = FEATURES.flatMap((feature) =>
  'routes' in feature ? feature.routes.map((route) => route.spec) : [],
);
