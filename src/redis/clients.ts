import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../log.js';
import { recordRedisClientError } from '../metrics.js';
import { RedisOutageLog } from './outage-log.js';

/**
 * Each role gets its own connection; BullMQ and the rate limiter must never share a client with the stores.
 *
 * - `store`: the API's record stores. Fail fast: no offline queue and a command timeout, so a request never
 *   hangs on a dead Redis; auto-pipelining batches the commands of concurrent requests into one write.
 * - `bulk`: the action store, whose values reach megabytes; same rules as `store`. Apart, so that one client's
 *   burst of large reads waits behind itself and not in front of every other request's small commands.
 * - `limiter`: the rate limiters; same fail-fast rules and auto-pipelining. Every /v1 request consumes a point
 *   before anything else, so unbatched, each would cost its own socket write (a quarter of the relay's CPU under
 *   load, see docs/benchmarks.md).
 * - `failFast`: the BullMQ producer; same fail-fast rules, no pipelining (BullMQ is not known to be safe with it).
 * - `worker`: BullMQ workers block on Redis and must retry forever (`maxRetriesPerRequest: null`).
 * - `socketPub`: the socket.io adapter's publisher. Fail fast: an event that cannot be published while Redis is
 *   away is dropped (the record stays readable and is replayed on join), it never queues up behind the outage.
 * - `socketSub`: the socket.io adapter's subscriber. It keeps its offline queue and retries forever, like a
 *   worker: a room subscribed during an outage is sent once Redis is back, and ioredis resubscribes every
 *   channel it held after a reconnect (a subscription that failed fast would be lost for good).
 */
export type RedisRole = 'store' | 'bulk' | 'limiter' | 'failFast' | 'worker' | 'socketPub' | 'socketSub';

export const COMMAND_TIMEOUT_MS = 1500;

function reconnectDelay(attempt: number): number {
  return Math.min(100 * attempt, 1000);
}

export function redisOptions(role: RedisRole): RedisOptions {
  const base: RedisOptions = {
    connectTimeout: 2000,
    retryStrategy: reconnectDelay,
    lazyConnect: false,
    connectionName: `relay-${role.replace(/[A-Z]/g, (upper) => `-${upper.toLowerCase()}`)}`,
  };
  if (role === 'worker' || role === 'socketSub') return { ...base, maxRetriesPerRequest: null };
  const failFast: RedisOptions = {
    ...base,
    enableOfflineQueue: false,
    commandTimeout: COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
  };
  return role === 'failFast' || role === 'socketPub' ? failFast : { ...failFast, enableAutoPipelining: true };
}

let outages: RedisOutageLog | undefined;

/** Called once by main: from then on every client's outages are logged (see RedisOutageLog), not only counted. */
export function logRedisOutages(log: Logger, summaryMs: number): void {
  outages = new RedisOutageLog(log, summaryMs);
}

export function createRedis(url: string, role: RedisRole): Redis {
  const client = new Redis(url, redisOptions(role));
  // Connection errors are reported through readiness, request failures, this counter and the outage log; an
  // unhandled 'error' event would only add noise (ioredis logs it to stderr when nobody listens).
  client.on('error', (err) => {
    recordRedisClientError(role);
    outages?.failed(client, err);
  });
  client.on('ready', () => outages?.ready(client));
  return client;
}

const UNAVAILABLE_REPLY = /^(LOADING|OOM|READONLY|MASTERDOWN|BUSY|NOREPLICAS|TRYAGAIN|CLUSTERDOWN)\b/;
const UNAVAILABLE_CLIENT = [
  "Stream isn't writeable",
  'Connection is closed',
  'Command timed out',
  'Reached the max retries per request limit',
  'connect ECONNREFUSED',
  'connect ETIMEDOUT',
  'connect EHOSTUNREACH',
  'read ECONNRESET',
  'getaddrinfo ',
];

/** Whether an error means "Redis cannot serve us right now" (→ 503) rather than a bug (→ 500). */
export function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'ReplyError') return UNAVAILABLE_REPLY.test(err.message);
  if (err.name === 'MaxRetriesPerRequestError') return true;
  return UNAVAILABLE_CLIENT.some((text) => err.message.includes(text));
}

/** Resolves once the client is ready, or rejects after `timeoutMs`. */
export async function waitReady(client: Redis, timeoutMs: number): Promise<void> {
  if (client.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      reject(new Error(`Redis not ready after ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    client.once('ready', onReady);
  });
}
