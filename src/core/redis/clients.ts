import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisNode, RedisTopology } from '../config/config.js';
import type { Logger } from '../log.js';
import type { RedisClient } from './client.js';
import { quietFailoverDetector } from '../library-patches.js';
import { recordRedisClientError } from '../metrics.js';
import { RedisOutageLog, rememberAddress } from './outage-log.js';

/**
 * Each role gets its own connection; BullMQ and the rate limiter must never share a client with the stores.
 *
 * - `store`: the API's record stores. Fail fast: no offline queue and a command timeout, so a request never
 *   hangs on a dead Redis; auto-pipelining batches the commands of concurrent requests into one write.
 * - `actions`: the action store, whose values reach megabytes; same rules as `store`. Apart, so that one client's
 *   burst of large reads waits behind itself and not in front of every other request's small commands.
 * - `limiter`: the rate limiters; same fail-fast rules and auto-pipelining. Every /v1 request consumes a point
 *   before anything else, so unbatched, each would cost its own socket write (a large share of the relay's CPU
 *   under load, see docs/benchmarks.md).
 * - `queue`: BullMQ producers, and one-off commands (the start-up settings report, the jobs script); same
 *   fail-fast rules, no pipelining (BullMQ is not known to be safe with it).
 * - `confirm`: write confirmations (REDIS_WAIT_REPLICAS, write-ack.ts), a small pool. `WAIT` blocks the
 *   connection it is sent on, so it never shares one with reads, limiters or readiness checks. Fail fast, no
 *   pipelining; the command timeout is above the longest REDIS_WAIT_TIMEOUT_MS.
 * - `worker`: BullMQ workers block on Redis and must retry forever (`maxRetriesPerRequest: null`).
 * - `socketPub`: the room channels' publisher (cross-pod events), auto-pipelined. It keeps its offline queue for
 *   a bounded time: after a failover the store's connection may be back before this one, and a record
 *   acknowledged in between must still reach the sockets already joined on other pods (nothing else would send it
 *   to them). Only acknowledged writes publish, so the queue holds the few seconds between two reconnects; after
 *   `PUBLISH_RETRIES` reconnect attempts (about 15 s) it is dropped, counted by
 *   `relay_socket_adapter_errors_total`, and the records are replayed on the next join.
 * - `socketSub`: the room channels' subscriber. It keeps its offline queue and retries forever, like a
 *   worker: a room subscribed during an outage is sent once Redis is back, and ioredis resubscribes every
 *   channel it held after a reconnect (a subscription that failed fast would be lost for good). On a cluster it
 *   subscribes to each sharded channel on the master of the channel's slot.
 *
 * The same roles exist on every topology (docs/operations.md#redis-topologies): a single Redis (REDIS_URL), a
 * Sentinel-managed master, or a Redis Cluster. Callers see one client type; the few that depend on a cluster's
 * slots or nodes check for a `Cluster`: the record reads' in-script rate limit and the push intent's ordering
 * (limits/rate-limit.ts, mailbox/store.ts), write confirmations, liveness and the settings report (one per master).
 */
export type RedisRole =
  'store' | 'actions' | 'limiter' | 'queue' | 'confirm' | 'worker' | 'socketPub' | 'socketSub';

/**
 * What each role is called outside the process: the `client` label of relay_redis_client_errors_total, and
 * `relay-<name, kebab-case>` in Redis's CLIENT LIST (docs/operations.md#metrics).
 */
const CLIENT_NAMES: Record<RedisRole, string> = {
  store: 'store',
  actions: 'bulk',
  limiter: 'limiter',
  queue: 'failFast',
  confirm: 'confirm',
  worker: 'worker',
  socketPub: 'socketPub',
  socketSub: 'socketSub',
};

export type { RedisClient } from './client.js';

const COMMAND_TIMEOUT_MS = 1500;

/** The room channels' publisher's reconnect attempts before it drops what it holds: 100 ms, 200 ms, … 1 s, 1 s, … */
const PUBLISH_RETRIES = 20;

/** Roles that wait out an outage instead of failing fast: BullMQ workers and the room channels' subscriber. */
const retriesForever = (role: RedisRole) => role === 'worker' || role === 'socketSub';

/**
 * TCP keep-alive probes start after this long idle, so the kernel drops a connection whose peer is gone. A path
 * that still acknowledges but no longer forwards is for Liveness (liveness.ts) to find.
 */
const KEEP_ALIVE_MS = 10_000;

function reconnectDelay(attempt: number): number {
  return Math.min(100 * attempt, 1000);
}

/**
 * A master demoted by a failover answers writes with READONLY until the client reconnects to the new master
 * (Sentinel tells it which). Reconnecting without resending keeps fail-fast roles fast: that one command fails
 * (→ 503) and the next reaches the new master; a worker resends.
 */
function reconnectOnReadOnly(role: RedisRole) {
  return (err: Error): boolean | 1 | 2 =>
    replyCode(err) === 'READONLY' ? (retriesForever(role) ? 2 : 1) : false;
}

/** Per-connection options; on a cluster they apply to every node's connection. */
export function redisOptions(role: RedisRole): RedisOptions {
  const base: RedisOptions = {
    connectTimeout: 2000,
    keepAlive: KEEP_ALIVE_MS,
    retryStrategy: reconnectDelay,
    lazyConnect: false,
    connectionName: `relay-${CLIENT_NAMES[role].replace(/[A-Z]/g, (upper) => `-${upper.toLowerCase()}`)}`,
    reconnectOnError: reconnectOnReadOnly(role),
  };
  if (retriesForever(role)) return { ...base, maxRetriesPerRequest: null };
  if (role === 'socketPub') {
    return { ...base, maxRetriesPerRequest: PUBLISH_RETRIES, enableAutoPipelining: true };
  }
  const failFast: RedisOptions = {
    ...base,
    enableOfflineQueue: false,
    commandTimeout: COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
  };
  return role === 'queue' || role === 'confirm' ? failFast : { ...failFast, enableAutoPipelining: true };
}

/**
 * Cluster-level options: the fail-fast rules hold for the cluster object too (no offline queue while the slot
 * map is being rebuilt), and the redirection budget keeps a request during a failover to about a second of
 * retries on MOVED/ASK, TRYAGAIN, CLUSTERDOWN and refused connections before it gives up (→ 503).
 */
function clusterOptions(role: RedisRole, node: RedisOptions): ClusterOptions {
  const { retryStrategy, enableOfflineQueue, enableAutoPipelining, ...perNode } = node;
  const failFast = !retriesForever(role);
  return {
    redisOptions: perNode,
    shardedSubscribers: role === 'socketSub',
    clusterRetryStrategy: retryStrategy as (attempt: number) => number,
    enableOfflineQueue: enableOfflineQueue ?? true,
    enableAutoPipelining: enableAutoPipelining ?? false,
    maxRedirections: failFast ? 8 : 16,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    slotsRefreshTimeout: 1000,
    // A failover changes the slot map; the periodic refresh finds it even when no command hit a MOVED.
    slotsRefreshInterval: 2000,
  };
}

function newClient(topology: RedisTopology, role: RedisRole): RedisClient {
  const options = redisOptions(role);
  switch (topology.kind) {
    case 'standalone':
      return new Redis(topology.url, {
        ...options,
        username: topology.username,
        password: topology.password,
        ...(topology.tls ? { tls: {} } : {}),
      });
    case 'sentinel':
      return quietFailoverDetector(
        new Redis({
          ...options,
          sentinels: topology.sentinels,
          name: topology.name,
          sentinelPassword: topology.sentinelPassword,
          username: topology.username,
          password: topology.password,
          ...(topology.tls ? { tls: {}, enableTLSForSentinelMode: true } : {}),
          sentinelRetryStrategy: reconnectDelay,
          // Sentinel announces a switch-master at once; without this the client learns it on the next error.
          failoverDetector: true,
        }),
      );
    case 'cluster':
      return new Cluster(
        topology.nodes,
        clusterOptions(role, {
          ...options,
          username: topology.username,
          password: topology.password,
          ...(topology.tls ? { tls: {} } : {}),
        }),
      );
  }
}

let outages: RedisOutageLog | undefined;

/** Called once by main: from then on every client's outages are logged (see RedisOutageLog), not only counted. */
export function logRedisOutages(log: Logger, summaryMs: number): void {
  outages = new RedisOutageLog(log, summaryMs);
}

const nodeList = (nodes: RedisNode[]) => nodes.map((node) => `${node.host}:${node.port}`).join(',');

/** What logs may say about a topology: its hosts and ports, never a password. */
function describe(topology: RedisTopology): string {
  switch (topology.kind) {
    case 'standalone': {
      const { hostname, port } = new URL(topology.url);
      return `${hostname || '127.0.0.1'}:${port || 6379}`;
    }
    case 'sentinel':
      return `sentinel ${topology.name} (${nodeList(topology.sentinels)})`;
    case 'cluster':
      return `cluster (${nodeList(topology.nodes)})`;
  }
}

export function createRedis(topology: RedisTopology, role: RedisRole): RedisClient {
  const client = newClient(topology, role);
  rememberAddress(client, describe(topology));
  // Connection errors are reported through readiness, request failures, this counter and the outage log; an
  // unhandled 'error' event would only add noise (ioredis logs it to stderr when nobody listens).
  client.on('error', (err) => {
    recordRedisClientError(CLIENT_NAMES[role]);
    outages?.failed(client, err);
  });
  client.on('ready', () => outages?.ready(client));
  return restartsAfterGivingUp(client);
}

/**
 * ioredis ends a client for good when its connector's connect() fails (a Sentinel connection cut while it asks
 * for the master, during a failover): a client the relay did not close itself starts over, so a pod recovers
 * without a restart.
 */
function restartsAfterGivingUp<T extends RedisClient>(client: T): T {
  let closing = false;
  const { quit, disconnect } = client;
  client.quit = ((...args: Parameters<T['quit']>) => {
    closing = true;
    return (quit as (...a: unknown[]) => unknown).apply(client, args);
  }) as T['quit'];
  client.disconnect = ((reconnect?: boolean) => {
    if (!reconnect) closing = true;
    return disconnect.call(client, reconnect);
  }) as T['disconnect'];
  client.on('end', () => {
    if (closing) return;
    setTimeout(() => {
      if (!closing && client.status === 'end') client.connect().catch(() => {});
    }, reconnectDelay(10)).unref();
  });
  return client;
}

export class NotReplicatedError extends Error {
  override name = 'NotReplicatedError';
}

/** The error code a Redis reply starts with (`READONLY`, `CROSSSLOT`, …); undefined for any other error. */
export function replyCode(err: unknown): string | undefined {
  if (!(err instanceof Error) || err.name !== 'ReplyError') return undefined;
  return /^[A-Z]+/.exec(err.message)?.[0];
}

/**
 * Reply codes that mean "Redis cannot serve us right now": a restart (LOADING), a failover in progress (READONLY
 * from a demoted master, MASTERDOWN, CLUSTERDOWN, TRYAGAIN during resharding, MOVED/ASK past the redirection
 * budget), credentials the server no longer takes (NOAUTH, WRONGPASS, NOPERM), or a server out of room or busy.
 * CROSSSLOT is not one: it is a bug (→ 500, logged).
 */
const UNAVAILABLE_REPLIES = new Set([
  'LOADING',
  'READONLY',
  'MASTERDOWN',
  'CLUSTERDOWN',
  'TRYAGAIN',
  'MOVED',
  'ASK',
  'NOAUTH',
  'WRONGPASS',
  'NOPERM',
  'OOM',
  'BUSY',
  'NOREPLICAS',
]);

/** Socket errors by their system code: an unreachable or lost connection. */
const UNAVAILABLE_SOCKETS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** ioredis's own errors of a class of their own. */
const UNAVAILABLE_CLASSES = new Set(['MaxRetriesPerRequestError', 'ClusterAllFailedError']);

/**
 * ioredis's own errors without a class or code: a connection closed or not writable, a command timed out, a
 * cluster or sentinel group out of reach. Fixed texts of the client, matched at their start, and only on errors
 * that are not replies (a script's error text can say anything).
 */
const UNAVAILABLE_CLIENT = [
  "Stream isn't writeable",
  'Connection is closed',
  'Command aborted due to connection close',
  'Command timed out',
  "Cluster isn't ready",
  'Too many Cluster redirections',
  'None of startup nodes is available',
  'All sentinels are unreachable',
];

/** Whether an error means "Redis cannot serve us right now" (→ 503) rather than a bug (→ 500). */
export function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'ReplyError') return UNAVAILABLE_REPLIES.has(replyCode(err) ?? '');
  if (err instanceof NotReplicatedError || UNAVAILABLE_CLASSES.has(err.name)) return true;
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== undefined) return UNAVAILABLE_SOCKETS.has(code);
  return UNAVAILABLE_CLIENT.some((text) => err.message.startsWith(text));
}

/**
 * Readiness: the client's Redis answers. On a cluster any node answers PING even while a master is lost and its
 * slots are unserved, so there the cluster's own verdict (`cluster_state:ok`) decides.
 */
export async function redisServes(client: RedisClient): Promise<boolean> {
  try {
    if (!(client instanceof Cluster)) return (await client.ping()) === 'PONG';
    const info = (await client.call('CLUSTER', 'INFO')) as string;
    return /^cluster_state:ok\b/m.test(info);
  } catch {
    return false;
  }
}

/** Resolves once the client is ready, or rejects after `timeoutMs`. */
export async function waitReady(client: RedisClient, timeoutMs: number): Promise<void> {
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
