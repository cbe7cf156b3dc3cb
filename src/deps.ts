import type { Config } from './config.js';
import type { WriteGuards } from './core/feature.js';
import type { Readiness } from './core/http/health-route.js';
import type { RouteSpec } from './core/http/route-spec.js';
import type { LimiterFactory } from './core/limits/limiters.js';
import type { Logger } from './core/log.js';
import type { RedisClient } from './core/redis/clients.js';
import type { Keys } from './core/redis/keys.js';
import type { WriteAck } from './core/redis/write-ack.js';
import type { SignedRoute } from './core/signed-routes.js';
import type { AuthGate, Sessions } from './identity/index.js';
import type { ActionEvents, LongPolls } from './mailbox/index.js';
import type { PresenceReads } from './realtime/index.js';
import type { StoreClients, Stores } from './stores.js';

/** What the API role opens for the app: its clients, key names, write confirmations and stores. */
export interface ApiParts {
  config: Config;
  log: Logger;
  /** Fail-fast clients: the stores', the rate limiters' own, the support producer's own. */
  redis: StoreClients & { limiter: RedisClient; queue: RedisClient };
  keys: Keys;
  /** Confirms writes with WAIT on connections of its own (REDIS_WAIT_REPLICAS). */
  ack: WriteAck;
  stores: Stores;
  readiness: Readiness;
  /** Told of every stored action (the socket emitter). */
  actionEvents: ActionEvents;
  /** The stream reads the pod holds, woken through the room channels; drained at SIGTERM. */
  longPolls: LongPolls;
  /** Each side's sockets per pair, for GET /v1/presence. */
  presence: PresenceReads;
  /** Identity signatures of writes, shared with the socket joins. */
  authGate: AuthGate;
  /** Session tokens: issued by the identity's routes, checked on reads, joins and writes. */
  sessions: Sessions;
}

/** Everything a feature's routes may use: the role's parts, the app's limiters and write guards, every endpoint. */
export interface ApiDeps extends ApiParts {
  limiter: LimiterFactory;
  guards: WriteGuards;
  specs: readonly RouteSpec<SignedRoute>[];
}

/** What a feature's worker part may use: the role's store client, key names and stores. */
export interface WorkerDeps {
  config: Config;
  log: Logger;
  redis: RedisClient;
  keys: Keys;
  stores: Stores;
}
