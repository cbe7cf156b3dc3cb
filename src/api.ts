import { createServer, type Server } from 'node:http';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { answerClientErrors } from './http/client-errors.js';
import { listen } from './listen.js';
import { errorFields, type Logger } from './log.js';
import { createRedis } from './redis/clients.js';
import type { RoleHandle } from './role.js';

export interface ApiHandle extends RoleHandle {
  readonly server: Server;
  /** `http://host:port` the API listens on (the real port when PORT=0). */
  readonly url: string;
}

/** Starts the API role: its own Redis clients, the Koa app and an HTTP server with bounded timeouts. */
export async function startApi(config: Config, log: Logger): Promise<ApiHandle> {
  const redis = createRedis(config.redisUrl, 'store');
  const bulkRedis = createRedis(config.redisUrl, 'bulk');
  const limiterRedis = createRedis(config.redisUrl, 'limiter');
  const queueRedis = createRedis(config.redisUrl, 'failFast');
  let draining = false;

  const app = buildApp({
    config,
    log,
    redis,
    bulkRedis,
    limiterRedis,
    queueRedis,
    readiness: {
      draining: () => draining,
      redisAnswers: () =>
        redis.ping().then(
          () => true,
          () => false,
        ),
    },
  });
  app.on('error', (err: unknown) => log.error('koa error', errorFields(err)));

  const server = createServer(
    // Node enforces requestTimeout only when it checks connections; check often enough to honour it.
    {
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(30_000, config.requestTimeoutMs / 2),
    },
    app.callback(),
  );
  server.headersTimeout = Math.min(15_000, config.requestTimeoutMs);
  answerClientErrors(server, log);
  // Longer than common load balancers' idle timeout (60 s), so they close first and never reuse a dead socket.
  server.keepAliveTimeout = 65_000;
  const url = await listen(server, config.port, config.host, 'PORT');
  log.info('api listening', { host: config.host, port: Number(new URL(url).port) });

  return {
    server,
    url,
    async stop() {
      draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const forced = setTimeout(() => {
        log.warn('shutdown timeout: closing remaining connections');
        server.closeAllConnections();
      }, config.shutdownTimeoutMs);
      await closed;
      clearTimeout(forced);
      await Promise.allSettled([redis.quit(), bulkRedis.quit(), limiterRedis.quit(), queueRedis.quit()]);
      log.info('api stopped');
    },
  };
}
