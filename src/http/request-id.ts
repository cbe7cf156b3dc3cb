import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../log.js';
import type { RelayState } from './context.js';

const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Echoes a sane incoming X-Request-Id, else makes one; every log line of the request carries it. */
export function requestId(log: Logger): Middleware<RelayState> {
  return async (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    const id = SANE_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = id;
    ctx.state.log = log.child({ requestId: id });
    ctx.set('X-Request-Id', id);
    await next();
  };
}
