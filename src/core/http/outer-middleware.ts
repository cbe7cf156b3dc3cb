import type { Middleware } from 'koa';
import type { Logger } from '../log.js';
import type { Readiness } from './health-route.js';
import { logRequest } from './access-log.js';
import { ipBucket } from './client-ip.js';
import { ConnectionGuard, type ConnectionLimits } from './connection-guard.js';
import type { RelayState } from './context.js';
import { answerError } from './error-envelope.js';
import { requestIdFrom } from './request-id.js';

/**
 * What every request of the app runs inside, outermost first:
 * 1. its id (a sane incoming X-Request-Id, else a new one), echoed and carried by every log line of the request;
 * 2. the connection guard (src/core/http/connection-guard.ts), which may hold the request back or drop it;
 * 3. on a draining pod, `Connection: close`, so keep-alive clients reconnect to another pod;
 * 4. the error envelope for whatever the rest throws (src/core/http/error-envelope.ts);
 * 5. the access log line and request metrics, once the status is final.
 * One middleware rather than five: it runs for every request, and each layer of Koa's chain costs a closure
 * and a promise per request (docs/benchmarks.md).
 */
export function outerMiddleware(
  log: Logger,
  limits: ConnectionLimits,
  readiness: Pick<Readiness, 'draining'>,
): Middleware<RelayState> {
  const guard = new ConnectionGuard(limits);
  return async (ctx, next) => {
    const started = performance.now();
    const requestId = requestIdFrom(ctx.req.headers['x-request-id']);
    const requestLog = log.child({ requestId });
    ctx.state.requestId = requestId;
    ctx.state.log = requestLog;
    ctx.set('X-Request-Id', requestId);
    const ip = ctx.ip;
    const pending = guard.admit({
      res: ctx.res,
      socket: ctx.req.socket,
      bucket: ipBucket(ip),
      method: ctx.method,
      ip,
      log: requestLog,
    });
    const admission = pending instanceof Promise ? await pending : pending;
    if (!admission) {
      ctx.respond = false;
      return;
    }
    ctx.state.admission = admission;
    if (readiness.draining()) ctx.set('Connection', 'close');
    try {
      await next();
    } catch (thrown) {
      answerError(ctx, thrown);
    }
    logRequest(ctx, performance.now() - started);
    admission.handled();
  };
}
