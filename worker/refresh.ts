import { Queue, Worker } from 'bullmq';
import { EVM_CHAINS } from '../src/chains.js';
import type { Config } from '../src/config.js';
import { errorFields, type Logger } from '../src/log.js';
import { instrumentWorker, watchQueueDepth } from '../src/metrics.js';
import { queuePrefix } from '../src/queue/prefix.js';
import { createRedis, waitReady, warnUnlessUnavailable } from '../src/redis/clients.js';
import { settlesWithin, type RoleHandle } from '../src/role.js';
import { fetchEvmFees, fetchMempoolFees, type FeeLevels } from '../src/providers/fees.js';
import { Upstream } from '../src/providers/http.js';
import { fetchCryptoPrices, fetchFiatRates } from '../src/providers/prices.js';
import { keysFor } from '../src/store/keys.js';
import { MarketStore, type FeeEntry, type RatesPart } from '../src/store/market-store.js';

export const REFRESH_QUEUE = 'refresh';

type RefreshName = 'rates' | 'fees';

/**
 * One refresh of each kind. Every provider is fetched on its own; what succeeds is written, what fails keeps its
 * last good value in Redis (and is logged), so one bad provider never blanks the others.
 */
export function refreshJobs(
  config: Config,
  log: Logger,
  store: MarketStore,
): Record<RefreshName, () => Promise<void>> {
  const { market } = config;
  const upstream = new Upstream(market.upstreamTimeoutMs);

  const failed = (what: string) => (err: unknown) => {
    log.warn('market provider failed; keeping the last good value', { provider: what, ...errorFields(err) });
  };

  async function rates(): Promise<void> {
    const parts: [RatesPart, () => Promise<Record<string, number>>][] = [
      ['crypto', () => fetchCryptoPrices(upstream, market.ratesCryptoUrl)],
      ['fiat', () => fetchFiatRates(upstream, market.ratesFiatUrl)],
    ];
    await Promise.all(
      parts.map(([part, fetch]) => fetch().then((values) => store.saveRatesPart(part, values), failed(part))),
    );
  }

  async function fees(): Promise<void> {
    const sources: [string, () => Promise<FeeLevels>][] = [
      ['btc', () => fetchMempoolFees(upstream, market.feesBtcUrl)],
      ['ltc', () => fetchMempoolFees(upstream, market.feesLtcUrl)],
      ...EVM_CHAINS.map((chain): [string, () => Promise<FeeLevels>] => [
        chain,
        () => fetchEvmFees(upstream, market.evmRpc[chain], market.priorityFeeFloorGwei[chain], chain),
      ]),
    ];
    const updatedAt = new Date().toISOString();
    const fixed: FeeEntry[] = Object.entries(market.fixedFees).map(([coin, fee]) => ({
      coin,
      economy: fee,
      normal: fee,
      fast: fee,
      recommended: fee,
      updatedAt,
    }));
    const fetched = await Promise.all(
      sources.map(([coin, fetch]) =>
        fetch().then((levels): FeeEntry => ({ coin, ...levels, updatedAt }), failed(coin)),
      ),
    );
    await store.saveFees([...fetched.filter((entry) => entry !== undefined), ...fixed]);
  }

  return { rates, fees };
}

/**
 * Job schedulers for the market refreshes. Every worker declares them (upsert is idempotent) and BullMQ runs
 * each period's job once, on whichever worker takes it, however many workers run.
 */
export async function startRefresh(config: Config, log: Logger): Promise<RoleHandle> {
  const storeRedis = createRedis(config.redis.topology, 'store');
  const producer = createRedis(config.redis.topology, 'failFast');
  const consumer = createRedis(config.redis.topology, 'worker');
  const prefix = queuePrefix(REFRESH_QUEUE);
  const jobs = refreshJobs(config, log, new MarketStore(storeRedis, keysFor(config.keyPrefix)));

  await waitReady(producer, 10_000);
  const queue = new Queue(REFRESH_QUEUE, { connection: producer, prefix });
  const periods: Record<RefreshName, number> = {
    rates: config.market.ratesRefreshSeconds,
    fees: config.market.feesRefreshSeconds,
  };
  for (const [name, seconds] of Object.entries(periods)) {
    await queue.upsertJobScheduler(
      name,
      { every: seconds * 1000 },
      { name, opts: { removeOnComplete: { count: 10 }, removeOnFail: { count: 50 } } },
    );
  }

  const worker = new Worker(REFRESH_QUEUE, (job) => jobs[job.name as RefreshName](), {
    connection: consumer,
    prefix,
    concurrency: 2,
  });
  queue.on('error', warnUnlessUnavailable(log, 'market refresh queue error'));
  worker.on('error', warnUnlessUnavailable(log, 'market refresh worker error'));
  worker.on('failed', (job, err) =>
    log.error('market refresh failed', { job: job?.name, ...errorFields(err) }),
  );
  instrumentWorker(worker);
  const unwatch = watchQueueDepth([queue]);
  log.info('market refresh scheduled', periods);

  return {
    // A refresh is idempotent: one cut short by shutdown simply runs again next period. Past the grace period
    // the worker is left to the exiting process: closing its connection under it would make BullMQ retry the
    // job's completion in a tight loop (it skips its retry delay while closing).
    async stop() {
      unwatch();
      if (!(await settlesWithin(worker.close(), config.shutdownTimeoutMs))) {
        log.warn('market refresh worker did not close in time');
        return;
      }
      await settlesWithin(queue.close(), 1000);
      for (const client of [storeRedis, producer, consumer]) client.disconnect();
    },
  };
}
