import { ok } from './context.js';
import type { RouteSpec } from './route-spec.js';
import type { Feature } from '../feature.js';
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
export const health = {
  routes: [
    { spec: livenessRead, handling: () => ({ handler: (ctx) => ok(ctx, { status: 'ok' }) }) },
    {
      spec: readinessRead,
      handling: ({ readiness }) => ({
        handler: async (ctx) => {
          if (readiness.draining()) throw unavailable('This instance is shutting down.', 1);
          if (!(await readiness.redisAnswers())) throw unavailable('Redis does not answer.', 1);
          ok(ctx, { status: 'ready' });
        },
      }),
    },
  ],
} satisfies Feature<{ readiness: Readiness }>;
