import type { Socket } from 'node:net';
import type { Middleware } from 'koa';
import { AnswerSlots } from './answer-slots.js';
import { ipBucket } from './client-ip.js';
import type { RelayState } from './context.js';

export interface ConnectionLimits {
  /** A response not fully handed to the kernel this long after the app finished it closes its connection. */
  drainTimeoutMs: number;
  /** Requests one connection may have waiting or in progress at once (HTTP/1.1 pipelining). */
  maxInFlight: number;
  /** Requests of one client address in progress at once, on all its connections (see AnswerSlots). */
  answersPerIp: number;
}

interface Connection {
  inFlight: number;
  /** Settles when the connection's latest response has been handed to the kernel, or the connection closed. */
  previous: Promise<void>;
  closed: Promise<void>;
}

const connections = new WeakMap<Socket, Connection>();

function connectionOf(socket: Socket): Connection {
  let connection = connections.get(socket);
  if (!connection) {
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    connection = { inFlight: 0, previous: Promise.resolve(), closed };
    connections.set(socket, connection);
  }
  return connection;
}

/**
 * Bounds what a client that never reads its responses can make the relay hold. Node parses every request
 * already in a connection's read buffer at once, so one packet of pipelined GETs would each fetch and buffer a
 * megabyte record. Here a connection's requests run one after another: each waits until the response before
 * it has left the process (HTTP/1.1 answers in order anyway), so a connection holds at most one unsent
 * response. More than `maxInFlight` waiting closes the connection; so does a response whose bytes the peer
 * does not take within `drainTimeoutMs`. The kernel takes several megabytes of each connection's answers
 * before that timer can start, so across connections one address's answers in progress are capped too
 * (`answersPerIp`, AnswerSlots).
 * Placed right after requestId: Koa enters it synchronously as Node emits each request.
 */
export function connectionGuard(limits: ConnectionLimits): Middleware<RelayState> {
  const slots = new AnswerSlots(limits.answersPerIp);
  return async (ctx, next) => {
    const { res } = ctx;
    const socket = ctx.req.socket;
    const connection = connectionOf(socket);
    if (connection.inFlight >= limits.maxInFlight || socket.destroyed) {
      // The rest of a closed connection's buffered requests still arrive here; one line says it all.
      if (!socket.destroyed)
        ctx.state.log.info('connection closed: too many pipelined requests', { ip: ctx.ip });
      socket.destroy();
      ctx.respond = false;
      return;
    }
    const waits = connection.inFlight > 0;
    connection.inFlight++;
    const previous = connection.previous;
    let done!: () => void;
    connection.previous = new Promise<void>((resolve) => (done = resolve));
    res.once('close', () => {
      connection.inFlight--;
      done();
    });
    // The common case, one request at a time, does not wait at all.
    if (waits) await Promise.race([previous, connection.closed]);
    const slot = socket.destroyed ? undefined : slots.acquire(ipBucket(ctx.ip));
    const release = slot instanceof Promise ? await slot : slot;
    if (!release || socket.destroyed) {
      release?.();
      ctx.respond = false;
      return;
    }
    // Held until the answer has left the process, or the connection closed ('close' follows both).
    res.once('close', release);
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
