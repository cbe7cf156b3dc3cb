import { createServer, type Server, type ServerResponse } from 'node:http';
import { addActionTypes } from './action-types/index.js';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { answerClientErrors, clientGone } from './core/http/client-errors.js';
import { RawRequestGuard, RelayResponse } from './core/http/raw-request-guard.js';
import { listen } from './core/http/listen.js';
import { errorFields, type Logger } from './core/log.js';
import { Realtime } from './realtime/index.js';
import { createRedis, redisServes } from './core/redis/clients.js';
import type { RoleHandle } from './core/role.js';
import { announceVerifier, chooseVerifier, openSessions } from './identity/index.js';
import { openKeys, openStores } from './stores.js';
import { LongPolls } from './mailbox/index.js';

export interface ApiHandle extends RoleHandle {
  readonly server: Server;
  /** `http://host:port` the API listens on (the real port when PORT=0). */
  readonly url: string;
}

/** Starts the API role: its own Redis clients, the Koa app and an HTTP server with bounded timeouts. */
export async function startApi(config: Config, log: Logger): Promise<ApiHandle> {
  addActionTypes(config.actionTypesExtra);
  const verification = chooseVerifier(config.auth.signatureVerifier);
  const redis = createRedis(config.redis.topology, 'store');
  const actionsRedis = createRedis(config.redis.topology, 'actions');
  const limiterRedis = createRedis(config.redis.topology, 'limiter');
  const queueRedis = createRedis(config.redis.topology, 'queue');
  const { keys, ack } = openKeys(config);
  const stores = openStores(config, { store: redis, actions: actionsRedis }, keys, ack);
  const { authGate, sessions } = openSessions(config, stores, verification.verifier);
  const realtime = new Realtime({
    config,
    log,
    keys,
    store: stores.actions,
    limiterRedis,
    authGate,
    redis,
  });
  const longPolls = new LongPolls(realtime.signals, config.longPoll.perIp);
  let draining = false;

  const app = buildApp({
    config,
    log,
    redis: { store: redis, actions: actionsRedis, limiter: limiterRedis, queue: queueRedis },
    keys,
    ack,
    stores,
    actionEvents: realtime.emitter,
    longPolls,
    presence: realtime.presence,
    authGate,
    sessions,
    readiness: {
      draining: () => draining,
      // The socket paths are served once the room channels' Redis connections were ready (see Realtime); the mailboxes
      // (routes, replay, events from other pods) need their own client ready as well as the other stores', and
      // with REDIS_WAIT_REPLICAS the write confirmations theirs.
      redisAnswers: async () =>
        realtime.serving() &&
        ack.ready() &&
        (await Promise.all([redisServes(redis), redisServes(actionsRedis)])).every(Boolean),
    },
  });
  app.on('error', (err: unknown) => {
    const code = (err as { code?: unknown } | null)?.code;
    if (clientGone(code)) log.debug('client went away', { code });
    else log.error('koa error', errorFields(err));
  });

  const server = createServer({
    // Node enforces requestTimeout only when it checks connections; check often enough to honour it.
    requestTimeout: config.requestTimeoutMs,
    connectionsCheckingInterval: Math.min(30_000, config.requestTimeoutMs / 2),
    // The raw request guard refuses those in the error envelope (Node's own refusal is a bare 400).
    requireHostHeader: false,
    ServerResponse: RelayResponse,
  });
  const handle = app.callback();
  // Koa's handler answers its own errors: its promise never rejects.
  const guard = new RawRequestGuard(server, (req, res) => void handle(req, res));
  server.headersTimeout = Math.min(15_000, config.requestTimeoutMs);
  answerClientErrors(server, log);
  // Longer than common load balancers' idle timeout (60 s), so they close first and never reuse a dead socket.
  server.keepAliveTimeout = 65_000;
  const url = await listen(server, config.port, config.host, 'PORT', log, config.httpBacklog);
  log.info('api listening', {
    host: config.host,
    port: Number(new URL(url).port),
    apiProfile: config.apiProfile,
    // AUTH_MODE, with AUTH_ROUTES over it: the mode of each signed route.
    auth: config.auth.modes,
  });
  announceVerifier(verification, log);
  // In the background: with Redis away at start-up, the REST API answers (503s) meanwhile.
  void realtime
    .attachWhenReady(guard)
    .catch((err: unknown) => log.error('sockets could not be served', errorFields(err)));

  return {
    server,
    url,
    async stop() {
      draining = true;
      // Held stream reads are answered now, with what there is: nothing is held from here on.
      longPolls.drain();
      log.info('api draining');
      const forced = setTimeout(() => {
        log.warn('shutdown timeout: closing remaining connections');
        server.closeAllConnections();
      }, config.shutdownTimeoutMs);
      // Sockets first, while the listener still accepts: their clients reconnect through the load balancer,
      // which no longer picks this pod (readiness is 503), and this pod refuses their handshakes meanwhile.
      await realtime.closeSockets(config.shutdownTimeoutMs);
      // In-flight requests finish; their connections, and those answered from now on, then close instead of
      // idling until the keep-alive timeout (the server's close waits for every connection).
      server.on('request', (_req, res: ServerResponse) => (res.shouldKeepAlive = false));
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      const sweep = setInterval(() => server.closeIdleConnections(), 100);
      await closed;
      clearInterval(sweep);
      clearTimeout(forced);
      // Only now: a record acknowledged during the drain still reaches the sockets on other pods.
      await realtime.closeAdapter();
      await Promise.allSettled([
        redis.quit(),
        actionsRedis.quit(),
        limiterRedis.quit(),
        queueRedis.quit(),
        ack.close(),
      ]);
      log.info('api stopped');
    },
  };
}
