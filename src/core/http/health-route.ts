import type Router from '@koa/router';
import { ok, type RelayState } from './context.js';
import { unavailable } from '../errors.js';

export interface Readiness {
  draining(): boolean;
  redisAnswers(): Promise<boolean>;
}

/** Outside /v1 and not rate limited: liveness never looks at Redis; readiness does. */
export function healthRoutes(router: Router<RelayState>, readiness: Readiness): void {
  router.get('/healthz', (ctx) => ok(ctx, { status: 'ok' }));

  router.get('/readyz', async (ctx) => {
    if (readiness.draining()) throw unavailable('This instance is shutting down.', 1);
    if (!(await readiness.redisAnswers())) throw unavailable('Redis does not answer.', 1);
    ok(ctx, { status: 'ready' });
  });
}
