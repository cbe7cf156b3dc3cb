import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../log.js';
import type { RelayState } from './context.js';

const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A sane incoming X-Request-Id, else a new one. */
export function requestIdFrom(incoming: string | string[] | undefined): string {
  return typeof incoming === 'string' && SANE_ID.test(incoming) ? incoming : randomUUID();
}

/** Echoes a sane incoming X-Request-Id, else makes one; every log line of the request carries it. */
export function requestId(log: Logger): Middleware<RelayState> {
  return async (ctx, next) => {
    const id = requestIdFrom(ctx.get('X-Request-Id'));
    ctx.state.requestId = id;
    ctx.state.log = log.child({ requestId: id });
    ctx.set('X-Request-Id', id);
    await next();
  };
}
