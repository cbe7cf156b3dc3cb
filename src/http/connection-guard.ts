import type { Socket } from 'node:net';
import type { Middleware } from 'koa';
import type { RelayState } from './context.js';

export interface ConnectionLimits {
  /** A response not fully handed to the kernel this long after the app finished it closes its connection. */
  drainTimeoutMs: number;
  /** Requests one connection may have in progress at once (HTTP/1.1 pipelining). */
  maxInFlight: number;
}

const inFlight = new WeakMap<Socket, number>();

/**
 * Bounds what a client that never reads its responses can make the relay hold. Node parses every request
 * already in a connection's read buffer at once, so one packet of pipelined GETs would each fetch and buffer a
 * megabyte record: past `maxInFlight` the connection is closed instead. And a written response whose bytes the
 * peer does not take within `drainTimeoutMs` closes its connection, releasing what it holds.
 * The first middleware: Koa enters it synchronously as Node emits each request.
 */
export function connectionGuard(limits: ConnectionLimits): Middleware<RelayState> {
  return async (ctx, next) => {
    const { res } = ctx;
    const socket = ctx.req.socket;
    const count = (inFlight.get(socket) ?? 0) + 1;
    if (count > limits.maxInFlight || socket.destroyed) {
      // The rest of a closed connection's buffered requests still arrive here; one line says it all.
      if (!socket.destroyed)
        ctx.state.log.info('connection closed: too many pipelined requests', { ip: ctx.ip });
      socket.destroy();
      ctx.respond = false;
      return;
    }
    inFlight.set(socket, count);
    res.once('close', () => inFlight.set(socket, (inFlight.get(socket) ?? 1) - 1));
    await next();
    const timer = setTimeout(() => {
      if (!socket.destroyed) ctx.state.log.info('connection closed: response not drained', { ip: ctx.ip });
      socket.destroy();
    }, limits.drainTimeoutMs);
    timer.unref();
    res.once('finish', () => clearTimeout(timer));
    res.once('close', () => clearTimeout(timer));
  };
}
