import type Router from '@koa/router';
import { ok, type RelayState } from './context.js';
import { mount, type RouteSpec } from './route-spec.js';
import { unavailable } from '../errors.js';

export interface Readiness {
  draining(): boolean;
  redisAnswers(): Promise<boolean>;
}

export const livenessRead = {
  method: 'get',
  path: '/healthz',
  summary: 'Liveness: the process runs (never looks at Redis); not rate limited',
  doc: 'health--get-healthz-get-readyz',
  data: 'Health',
  errors: [],
} satisfies RouteSpec;

export const readinessRead = {
  method: 'get',
  path: '/readyz',
  summary: 'Readiness: Redis answers and the instance is not draining; not rate limited',
  doc: 'health--get-healthz-get-readyz',
  data: 'Health',
  errors: ['UNAVAILABLE'],
} satisfies RouteSpec;

/** Outside /v1 and not rate limited: liveness never looks at Redis; readiness does. */
export function healthRoutes(router: Router<RelayState>, readiness: Readiness): void {
  mount(router, livenessRead, (ctx) => ok(ctx, { status: 'ok' }));

  mount(router, readinessRead, async (ctx) => {
    if (readiness.draining()) throw unavailable('This instance is shutting down.', 1);
    if (!(await readiness.redisAnswers())) throw unavailable('Redis does not answer.', 1);
    ok(ctx, { status: 'ready' });
  });
}
