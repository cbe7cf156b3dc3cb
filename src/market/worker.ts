import { Queue, Worker } from 'bullmq';
import type { CoreConfig } from '../core/config/config.js';
import type { MarketConfig } from './variables.js';
import { errorFields, type Logger } from '../core/log.js';
import { instrumentWorker, watchQueueDepth } from '../core/metrics.js';
import { logBullErrors } from '../core/queue/bull-errors.js';
import { queuePrefix } from '../core/queue/prefix.js';
import { createRedis, isRedisUnavailable } from '../core/redis/clients.js';
import { settlesWithin, type RoleHandle } from '../core/role.js';
import { refreshJobs, type RefreshName } from './refresh.js';
import type { MarketStore } from './store.js';

export const REFRESH_QUEUE = 'refresh';

/** How often, at most, the worker checks that Redis still holds its job schedulers. */
const SCHEDULER_CHECK_MAX_MS = 60_000;

export interface RefreshDeps {
  config: CoreConfig & { market: MarketConfig };
  log: Logger;
  stores: { market: MarketStore };
}

/**
 * Job schedulers for the market refreshes. Every worker declares them (upsert is idempotent) and BullMQ runs
 * each period's job once, on whichever worker takes it, however many workers run. Redis can lose them (FLUSHALL,
 * a restart without persistence) and nothing would run again: each worker checks that they exist after every
 * (re)connect and every shortest period, and re-creates what is missing.
 */
export async function startRefresh({ config, log, stores }: RefreshDeps): Promise<RoleHandle> {
  // Nothing is declared either, so a laptop without internet starts quietly; the API says why rates are missing.
  if (!config.market.refresh) {
    log.info('market refresh off (MARKET_REFRESH=off): no rates or fees are fetched');
    return { stop: async () => {} };
  }
  const producer = createRedis(config.redis.topology, 'queue');
  const consumer = createRedis(config.redis.topology, 'worker');
  const jobs = refreshJobs(config, log, stores.market);

  const prefix = queuePrefix(config.keyPrefix, REFRESH_QUEUE);
  const queue = new Queue(REFRESH_QUEUE, { connection: producer, prefix, skipVersionCheck: true });
  logBullErrors(queue, 'market refresh queue', log);
  const periods: Record<RefreshName, number> = {
    rates: config.market.ratesRefreshSeconds,
    fees: config.market.feesRefreshSeconds,
  };
  const schedule = async (created: 'declared' | 'missing') => {
    for (const [name, seconds] of Object.entries(periods)) {
      if (created === 'missing' && (await queue.getJobScheduler(name))) continue;
      await queue.upsertJobScheduler(
        name,
        { every: seconds * 1000 },
        { name, opts: { removeOnComplete: { count: 10 }, removeOnFail: { count: 50 } } },
      );
      if (created === 'missing')
        log.warn('market refresh schedule was missing in Redis; re-created', { name });
    }
  };
  // One check at a time; a check while Redis is down fails at once (fail-fast client) and the next one retries.
  let checking: Promise<void> | undefined;
  const check = (created: 'declared' | 'missing') => {
    checking ??= schedule(created)
      .catch((err: unknown) => {
        if (!isRedisUnavailable(err)) log.warn('market refresh schedule check failed', errorFields(err));
      })
      .finally(() => (checking = undefined));
  };
  let connected = false;
  producer.on('ready', () => {
    check(connected ? 'missing' : 'declared');
    connected = true;
  });
  const timer = setInterval(
    () => connected && check('missing'),
    Math.min(SCHEDULER_CHECK_MAX_MS, ...Object.values(periods).map((seconds) => seconds * 1000)),
  );

  const worker = new Worker(REFRESH_QUEUE, (job) => jobs[job.name as RefreshName](), {
    connection: consumer,
    prefix,
    concurrency: 2,
  });
  logBullErrors(worker, 'market refresh worker', log);
  worker.on('failed', (job, err) => {
    if (!isRedisUnavailable(err)) log.error('market refresh failed', { job: job?.name, ...errorFields(err) });
  });
  instrumentWorker(worker);
  const unwatch = watchQueueDepth([queue]);
  log.info('market refresh scheduled', periods);

  return {
    // A refresh is idempotent: one cut short by shutdown simply runs again next period. Past the grace period
    // the worker is left to the exiting process: closing its connection under it would make BullMQ retry the
    // job's completion in a tight loop (it skips its retry delay while closing).
    async stop() {
      clearInterval(timer);
      unwatch();
      if (!(await settlesWithin(worker.close(), config.shutdownTimeoutMs))) {
        log.warn('market refresh worker did not close in time');
        return;
      }
      await settlesWithin(queue.close(), 1000);
      for (const client of [producer, consumer]) client.disconnect();
    },
  };
}
