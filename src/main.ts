import { startApi } from './api.js';
import { loadConfig, type Config } from './config.js';
import { ConfigError } from './core/config/config.js';
import { captureConsole } from './core/capture-console.js';
import { checkPatchedLibraries } from './core/library-patches.js';
import { createLogger, errorFields, type Logger } from './core/log.js';
import { startMetricsServer } from './core/metrics.js';
import { logRedisOutages } from './core/redis/clients.js';
import { redisForLaptop } from './core/redis/dev-redis.js';
import { reportRedisSettings } from './core/redis/settings-report.js';
import { settlesWithin, type RoleHandle } from './core/role.js';
import { startWorker } from '../worker/main.js';

/** One line on stderr and a non-zero exit: for what stops start-up before the relay has said anything. */
function refuse(message: string, code: number): never {
  process.stderr.write(`multisig-relay: ${message}\n`);
  process.exit(code);
}

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) refuse(`invalid configuration: ${err.message}`, 2);
    throw err;
  }
}

checkPatchedLibraries();
const config = configOrExit();
const log = createLogger(
  config.logLevel,
  { service: 'multisig-relay', role: config.role },
  undefined,
  config.logFormat,
);
const summaryMs = config.logSummarySeconds * 1000;
captureConsole(log, summaryMs);
logRedisOutages(log, summaryMs);

process.on('unhandledRejection', (reason) => log.error('unhandled rejection', errorFields(reason)));

/** Room beyond SHUTDOWN_TIMEOUT_MS for releasing jobs and closing connections. */
const SHUTDOWN_SLACK_MS = 5000;

const ROLE_STARTERS: Record<Config['role'], ((config: Config, log: Logger) => Promise<RoleHandle>)[]> = {
  api: [startApi],
  worker: [startWorker],
  all: [startApi, startWorker],
};

/** Stopped after the roles, so the last scrape before exit sees the final counts. */
let metrics: RoleHandle | undefined;
/** The roles and the Redis settings report, as far as they started. */
const started: RoleHandle[] = [];
let stopping = false;

/**
 * Nothing here waits for Redis: the roles connect on their own, so /healthz answers and SIGTERM is honoured
 * while Redis is away. Every listener is bound before any is announced, so a busy port fails on its own line.
 */
async function startUp(): Promise<void> {
  metrics = await startMetricsServer(config, log);
  const { topology } = config.redis;
  if (topology.kind === 'standalone' && !topology.explicit) {
    topology.url = await redisForLaptop(log);
  }
  for (const start of ROLE_STARTERS[config.role]) {
    if (stopping) return;
    started.push(await start(config, log));
  }
  started.push(reportRedisSettings(config.redis.topology, log));
  if (metrics) log.info('metrics listening', { host: config.host, port: config.metricsPort });
}

const starting = startUp();

async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info('shutting down', { signal });
  // Start-up never waits on Redis, so waiting for it is short; the watchdog below bounds it all the same.
  const drained = starting
    .catch(() => undefined)
    .then(async () => {
      // Each role bounds its own drain by SHUTDOWN_TIMEOUT_MS; draining them side by side keeps `all` within it.
      await Promise.all(started.map((handle) => handle.stop()));
      await metrics?.stop();
    });
  if (!(await settlesWithin(drained, config.shutdownTimeoutMs + SHUTDOWN_SLACK_MS))) {
    log.error('shutdown did not finish in time; exiting anyway');
    process.exit(1);
  }
  try {
    await drained;
    process.exit(0);
  } catch (err) {
    log.error('shutdown failed', errorFields(err));
    process.exit(1);
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

try {
  await starting;
} catch (err) {
  refuse(err instanceof Error ? err.message : String(err), 1);
}
