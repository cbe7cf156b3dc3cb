import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/core/log.js';
import type { RoleHandle } from '../../src/core/role.js';
import { createRedis } from '../../src/core/redis/clients.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { MarketStore } from '../../src/market/index.js';
import { startRefresh } from '../../src/market/worker.js';
import { get, startTestApi, testEnv } from '../helpers/api.js';
import { MarketFakes } from '../helpers/market-fakes.js';
import { redis, testRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Generous on purpose: after a restart the worker's connections come back on ioredis' backoff, then BullMQ
 * re-creates the schedules; on a loaded machine that took more than the 8 s this once allowed.
 */
const REFRESH_WAIT_MS = 20_000;
const until = (what: string, check: () => boolean | Promise<boolean>) =>
  waitFor(what, check, REFRESH_WAIT_MS);

describe('market refresh job schedulers (BullMQ)', function () {
  this.timeout(3 * REFRESH_WAIT_MS);
  const fakes = new MarketFakes();
  const env = () => testEnv({ ...fakes.env(), RATES_REFRESH_SECONDS: '1', FEES_REFRESH_SECONDS: '1' });
  const workers: RoleHandle[] = [];
  const start = async () => {
    const config = loadConfig(env());
    const store = createRedis(config.redis.topology, 'store');
    const market = new MarketStore(store, keysFor(config.keyPrefix));
    const refresh = await startRefresh({ config, log: createLogger('error'), stores: { market } });
    const worker = {
      async stop() {
        await refresh.stop();
        store.disconnect();
      },
    };
    workers.push(worker);
    return worker;
  };

  before(() => fakes.start());
  after(() => fakes.stop());
  beforeEach(() => fakes.reset());
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop()));
  });

  it('two workers run one refresh per period between them', async () => {
    await Promise.all([start(), start()]);
    await until('four price fetches', () => fakes.crypto.requests.length >= 4);
    const hits = fakes.crypto.requests.map((req) => req.at);
    const gaps = hits.slice(1).map((at, i) => at - hits[i]!);
    expect(
      gaps.every((gap) => gap >= 500),
      `gaps between price fetches: ${gaps.join(', ')} ms`,
    ).to.equal(true);
    expect(await redis().zrange('relay:{bull:refresh}:refresh:repeat', 0, -1)).to.have.members([
      'fees',
      'rates',
    ]);
  });

  const refreshesAgain = async () => {
    await until('rates and fees', async () => (await redis().exists('relay:rates', 'relay:fees')) === 2);
    const seen = fakes.crypto.requests.length;
    await until('another price fetch', () => fakes.crypto.requests.length > seen);
    expect(await redis().zrange('relay:{bull:refresh}:refresh:repeat', 0, -1)).to.have.members([
      'fees',
      'rates',
    ]);
  };

  it('Redis losing its data (FLUSHALL): the worker re-creates its schedules and rates and fees come back', async () => {
    await start();
    await until('rates and fees', async () => (await redis().exists('relay:rates', 'relay:fees')) === 2);
    await redis().flushall();
    await refreshesAgain();
  });

  it('Redis restarted without persistence: the schedules are re-created after the reconnect', async () => {
    await start();
    await until('rates and fees', async () => (await redis().exists('relay:rates', 'relay:fees')) === 2);
    await testRedis().stop();
    await testRedis().start();
    await refreshesAgain();
  });

  it('the API serves what the worker fetched, starting right after the worker starts', async () => {
    await start();
    const api = await startTestApi(fakes.env());
    try {
      await until('rates served', async () => (await get(api.url, '/v1/rates')).status === 200);
      await until(
        'fees served',
        async () => (await get(api.url, '/v1/networkfees')).body.data?.length === 17,
      );
      expect((await get(api.url, '/v1/rates')).body.data.crypto.btc).to.equal(97000.1);
    } finally {
      await api.stop();
    }
  });
});
