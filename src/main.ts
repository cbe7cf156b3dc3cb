import { startApi } from './api.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createLogger, errorFields } from './log.js';
import { startMetricsServer } from './metrics.js';
import { redisForLaptop } from './redis/dev-redis.js';
import { settlesWithin, type RoleHandle } from './role.js';
import { startWorker } from '../worker/main.js';

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`multisig-relay: invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

const config = configOrExit();
const log = createLogger(config.logLevel, { service: 'multisig-relay', role: config.role });

process.on('unhandledRejection', (reason) => log.error('unhandled rejection', errorFields(reason)));

try {
  const { topology } = config.redis;
  if (topology.kind === 'standalone' && !topology.explicit) {
    topology.url = await redisForLaptop(topology.url, log);
  }
} catch (err) {
  process.stderr.write(`multisig-relay: ${(err as Error).message}\n`);
  process.exit(1);
}

/** Room beyond SHUTDOWN_TIMEOUT_MS for releasing jobs and closing connections. */
const SHUTDOWN_SLACK_MS = 5000;

const roles: RoleHandle[] = [];
let metrics: RoleHandle | undefined;
let stopping = false;

async function startRoles(): Promise<void> {
  if (config.role !== 'worker') roles.push(await startApi(config, log));
  if (config.role !== 'api') roles.push(await startWorker(config, log));
  // Started after the roles and stopped after them, so the last scrape before exit sees the final counts.
  metrics = await startMetricsServer(config, log);
}

// Handlers first: a SIGTERM that arrives while the roles start waits for them, then drains them cleanly.
const started = startRoles();

async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info('shutting down', { signal });
  try {
    await started.catch(() => undefined);
    // Each role bounds its own drain by SHUTDOWN_TIMEOUT_MS; draining them side by side keeps `all` within it.
    // The watchdog is the last resort should a step still hang: the process must leave within the grace period.
    const drained = Promise.all(roles.map((role) => role.stop())).then(() => metrics?.stop());
    if (!(await settlesWithin(drained, config.shutdownTimeoutMs + SHUTDOWN_SLACK_MS))) {
      log.error('shutdown did not finish in time; exiting anyway');
      process.exit(1);
    }
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
  await started;
} catch (err) {
  log.error('start-up failed', errorFields(err));
  process.exit(1);
}
