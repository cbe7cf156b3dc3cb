import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../log.js';
import { IpConcurrencyLimit } from '../limits/ip-concurrency.js';

export interface ConnectionLimits {
  /** A response not fully handed to the kernel this long after the app finished it closes its connection. */
  drainTimeoutMs: number;
  /** Requests one connection may have waiting or in progress at once (HTTP/1.1 pipelining). */
  maxInFlight: number;
  /**
   * Reads of one client address in progress at once on all its connections, and as many other requests (see
   * IpConcurrencyLimit).
   */
  answersPerIp: number;
}

interface Connection {
  /** Requests of the connection that have arrived and whose response has not closed yet. */
  inFlight: number;
  /** The pipelined requests waiting for the one before them, in arrival order. */
  waiting: (() => void)[];
  closed: Promise<void>;
}

const connections = new WeakMap<Socket, Connection>();

/** The methods that never write: their slots are the reads' pool. */
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

function connectionOf(socket: Socket): Connection {
  let connection = connections.get(socket);
  if (!connection) {
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    connection = { inFlight: 0, waiting: [], closed };
    connections.set(socket, connection);
  }
  return connection;
}

/** What the outer middleware tells the guard of one request. */
export interface GuardedRequest {
  res: ServerResponse;
  socket: Socket;
  /** The client's rate-limit bucket (ipBucket). */
  bucket: string;
  /** The request's HTTP method: reads and writes hold slots of separate pools. */
  method: string;
  ip: string;
  log: Logger;
}

/** A request the guard admitted: `handled` once its route is done, so the drain timer can start. */
export interface Admission {
  handled(): void;
  /**
   * Runs `work` without the request's slot: a request that waits with no answer in progress (a long-poll) does
   * not hold back its address's other requests; it takes a slot again, waiting its turn, once `work` settles.
   */
  idle<T>(work: Promise<T>): Promise<T>;
}

/**
 * Bounds what a client that never reads its responses can make the relay hold. Node parses every request
 * already in a connection's read buffer at once, so one packet of pipelined GETs would each fetch and buffer a
 * megabyte record. Here a connection's requests run one after another: each waits until the response before
 * it has left the process (HTTP/1.1 answers in order anyway), so a connection holds at most one unsent
 * response. More than `maxInFlight` waiting closes the connection; so does a response whose bytes the peer
 * does not take within `drainTimeoutMs`. The kernel takes several megabytes of each connection's answers
 * before that timer can start, so across connections one address's answers in progress are capped too
 * (`answersPerIp`, IpConcurrencyLimit). Reads and writes have a pool each: a write waiting for replicas
 * (REDIS_WAIT_REPLICAS) holds its slot until its answer, and must not hold back its address's reads.
 *
 * The common request (nothing before it on its connection, a free slot) is admitted in the same tick and costs
 * one listener on its response: this runs for every request of the API.
 */
export class ConnectionGuard {
  private readonly reads: IpConcurrencyLimit;
  private readonly writes: IpConcurrencyLimit;

  constructor(private readonly limits: ConnectionLimits) {
    this.reads = new IpConcurrencyLimit(limits.answersPerIp);
    this.writes = new IpConcurrencyLimit(limits.answersPerIp);
  }

  /**
   * The request's admission, or undefined when its connection is (now) closed and nothing must be answered.
   * A promise only when the request has to wait: behind its connection's previous answer, or for a slot.
   */
  admit(request: GuardedRequest): Admission | undefined | Promise<Admission | undefined> {
    const { res, socket } = request;
    const connection = connectionOf(socket);
    if (connection.inFlight >= this.limits.maxInFlight || socket.destroyed) {
      // The rest of a closed connection's buffered requests still arrive here; one line says it all.
      if (!socket.destroyed)
        request.log.info('connection closed: too many pipelined requests', { ip: request.ip });
      socket.destroy();
      return undefined;
    }
    const waits = connection.inFlight > 0;
    connection.inFlight++;
    let release: (() => void) | undefined;
    let drain: NodeJS.Timeout | undefined;
    // 'close' follows 'finish' and a lost connection alike: the one place this request's holdings end.
    res.on('close', () => {
      connection.inFlight--;
      connection.waiting.shift()?.();
      release?.();
      clearTimeout(drain);
    });
    const slots = READS.has(request.method) ? this.reads : this.writes;
    const admission: Admission = {
      idle: async (work) => {
        const slot = release;
        release = undefined;
        slot?.();
        try {
          return await work;
        } finally {
          const next = slots.acquire(request.bucket);
          const taken = next instanceof Promise ? await next : next;
          if (res.closed) taken();
          else release = taken;
        }
      },
      handled: () => {
        if (res.closed) return;
        drain = setTimeout(() => {
          if (!socket.destroyed)
            request.log.info('connection closed: response not drained', { ip: request.ip });
          socket.destroy();
        }, this.limits.drainTimeoutMs);
        drain.unref();
      },
    };
    const admitted = (slot: () => void): Admission | undefined => {
      release = slot;
      if (!socket.destroyed) return admission;
      slot();
      return undefined;
    };
    if (!waits) {
      const slot = slots.acquire(request.bucket);
      return slot instanceof Promise ? slot.then(admitted) : admitted(slot);
    }
    return this.afterPrevious(connection, socket, () => slots.acquire(request.bucket)).then((slot) =>
      slot ? admitted(slot) : undefined,
    );
  }

  private async afterPrevious(
    connection: Connection,
    socket: Socket,
    acquire: () => (() => void) | Promise<() => void>,
  ): Promise<(() => void) | undefined> {
    await Promise.race([new Promise<void>((resolve) => connection.waiting.push(resolve)), connection.closed]);
    return socket.destroyed ? undefined : acquire();
  }
}
