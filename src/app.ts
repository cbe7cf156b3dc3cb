import Koa from 'koa';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import type { AuthGate } from './identity/index.js';
import type { SignedRoute } from './core/signed-routes.js';
import type { Config } from './config.js';
import { signedBody } from './identity/index.js';
import { successAnswers, type RelayState } from './core/http/context.js';
import { corsPolicy } from './core/http/cors.js';
import { sharedLimiter } from './core/limits/limiters.js';
import { GlobalLimit } from './core/limits/rate-limit.js';
import { rateLimit, writeBudget } from './core/limits/rate-limit-middleware.js';
import { outerMiddleware } from './core/http/outer-middleware.js';
import { createRouter, consumesLimitInScript, isV1, unmatched } from './core/http/routing.js';
import type { Logger } from './core/log.js';
import type { RedisClient } from './core/redis/clients.js';
import { partnerRegistry } from './partners/index.js';
import { Upstream } from './core/outbound-http.js';
import { actionRoutes, actionWrite, storedAction, type ActionEvents } from './mailbox/index.js';
import { healthRoutes, type Readiness } from './core/http/health-route.js';
import { marketRoutes } from './market/index.js';
import { noncesRoutes } from './identity/index.js';
import { bareRoutes, buildOpenApi, ROUTES } from './contract/index.js';
import { buildAsyncApi, contractRoutes } from './contract/index.js';
import { recoveryPubRoutes, recoveryPubWrite, storedRecoveryPub } from './pairing/index.js';
import { servicesRoutes } from './market/index.js';
import { signRoutes } from './partners/index.js';
import { SupportProducer, supportRoutes } from './support/index.js';
import { storedSync, syncRoutes, syncWrite } from './pairing/index.js';
import { storedCounts, tokenRoutes, tokenWrite } from './push/index.js';
import type { ActionStore } from './mailbox/index.js';
import { keysFor } from './core/redis/keys.js';
import { MarketStore } from './market/index.js';
import { RecoveryPubStore } from './pairing/index.js';
import { SyncStore } from './pairing/index.js';
import { TokenStore } from './push/index.js';
import type { StoredAnswer } from './core/types.js';
import type { WriteAck } from './core/redis/write-ack.js';
import { TokenInfoService } from './market/index.js';

export interface ApiDeps {
  config: Config;
  log: Logger;
  /** The stores' client (auto-pipelined, fail-fast). */
  redis: RedisClient;
  /** The rate limiters' own fail-fast client. */
  limiterRedis: RedisClient;
  /** The support producer's own fail-fast client: a job is acknowledged only once Redis has it. */
  queueRedis: RedisClient;
  /** Confirms writes with WAIT on connections of its own (REDIS_WAIT_REPLICAS). */
  ack: WriteAck;
  readiness: Readiness;
  /**
   * The pair's mailbox, shared with the socket replay. On its own fail-fast client (`actions`): megabyte payloads
   * go through it, so a flood of large reads queues behind itself, never in front of other requests' commands.
   */
  actionStore: ActionStore;
  /** Told of every stored action (the socket emitter). */
  actionEvents: ActionEvents;
  /** Identity signatures of writes, shared with the socket joins. */
  authGate: AuthGate;
}

/** The Koa app: middleware in request order, then every resource's routes. */
export function buildApp(deps: ApiDeps): Koa<RelayState> {
  const { config, log, redis } = deps;
  const app = new Koa<RelayState>({
    proxy: config.rateLimit.trustProxyHops > 0,
    maxIpsCount: config.rateLimit.trustProxyHops,
  });
  app.silent = true;

  const keys = keysFor(config.keyPrefix);
  const router = createRouter();
  healthRoutes(router, deps.readiness);
  const { ack } = deps;
  const bytesWritten = writeBudget(
    sharedLimiter(
      deps.limiterRedis,
      config.keyPrefix,
      'bytes',
      config.writeBudget.bytes,
      config.writeBudget.windowSeconds,
    ),
  );
  const guards = ({ signedAs }: { signedAs: SignedRoute }, stored: StoredAnswer) => ({
    writeBudget: bytesWritten,
    signed: signedBody(deps.authGate, signedAs, stored),
  });
  const tokenRegistrations = {
    perPairSide: sharedLimiter(
      deps.limiterRedis,
      config.keyPrefix,
      'tokens',
      config.push.registrations.perHour,
      3600,
    ),
    perAddress: sharedLimiter(
      deps.limiterRedis,
      config.keyPrefix,
      'tokenaddress',
      config.push.registrations.perAddressPerDay,
      86_400,
    ),
  };
  const syncStore = new SyncStore(redis, keys, config.sync, ack);
  const tokenStore = new TokenStore(redis, keys, ack);
  syncRoutes(
    router,
    { sync: syncStore, tokens: tokenStore },
    guards(syncWrite, storedSync(syncStore)),
    tokenRegistrations,
  );
  actionRoutes(
    router,
    deps.actionStore,
    {
      ttlSeconds: config.action.ttlSeconds,
      expireAt: config.apiProfile === 'ssp-apps',
      unsignedActions: config.auth.unsignedActions,
    },
    guards(actionWrite, storedAction(deps.actionStore)),
    deps.actionEvents,
  );
  tokenRoutes(router, tokenStore, guards(tokenWrite, storedCounts(tokenStore)), tokenRegistrations);
  const recoveryPubStore = new RecoveryPubStore(redis, keys, config.recoveryPub.ttlSeconds, ack);
  recoveryPubRoutes(
    router,
    recoveryPubStore,
    guards(recoveryPubWrite, storedRecoveryPub(recoveryPubStore)),
    sharedLimiter(
      deps.limiterRedis,
      config.keyPrefix,
      'recoverypub',
      config.recoveryPub.creationsPerAddressPerDay,
      86_400,
    ),
  );
  noncesRoutes(router);
  servicesRoutes(router, config.market.services);
  contractRoutes(router, { openApi: buildOpenApi(config.apiProfile), asyncApi: buildAsyncApi() });
  const marketStore = new MarketStore(redis, keys);
  const upstream = new Upstream(config.market.upstreamTimeoutMs);
  marketRoutes(
    router,
    marketStore,
    new TokenInfoService(marketStore, upstream, config.market.evmRpc),
    config.market.refresh,
  );
  signRoutes(
    router,
    partnerRegistry(config),
    sharedLimiter(deps.limiterRedis, config.keyPrefix, 'sign', config.sign.perMinute, 60),
    config.apiProfile === 'ssp-apps',
  );
  supportRoutes(
    router,
    new SupportProducer(deps.queueRedis, config.keyPrefix, keys, config.support.delivery, log, ack),
    sharedLimiter(
      deps.limiterRedis,
      config.keyPrefix,
      'submissions',
      config.support.submissionsPerDay,
      86_400,
    ),
  );

  const { points, windowSeconds } = config.rateLimit;
  const inMemory = new RateLimiterMemory({ points, duration: windowSeconds });
  const globalLimit = new GlobalLimit(
    sharedLimiter(deps.limiterRedis, config.keyPrefix, 'api', points, windowSeconds, inMemory),
    inMemory,
    points,
    windowSeconds,
  );

  app.use(outerMiddleware(log, config.connections, deps.readiness));
  app.use(corsPolicy(config.corsOrigins));
  app.use(rateLimit(globalLimit, isV1, consumesLimitInScript(ROUTES)));
  app.use(unmatched(router));
  app.use(successAnswers(bareRoutes(config.apiProfile)));
  app.use(router.routes());
  return app;
}
