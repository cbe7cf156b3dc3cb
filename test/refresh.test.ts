import { expect } from 'chai';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import type { RoleHandle } from '../src/role.js';
import { startRefresh } from '../worker/refresh.js';
import { get, startTestApi, testEnv } from './helpers/api.js';
import { MarketFakes } from './helpers/market-fakes.js';
import { redis, testRedis } from './helpers/redis.js';

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('market refresh job schedulers (BullMQ)', () => {
  const fakes = new MarketFakes();
  const env = () => testEnv({ ...fakes.env(), RATES_REFRESH_SECONDS: '1', FEES_REFRESH_SECONDS: '1' });
  const workers: RoleHandle[] = [];
  const start = async () => {
    const worker = await startRefresh(loadConfig(env()), createLogger('error'));
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
    await waitFor(() => fakes.crypto.requests.length >= 4);
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
    await waitFor(async () => (await redis().exists('relay:rates', 'relay:fees')) === 2);
    const seen = fakes.crypto.requests.length;
    await waitFor(() => fakes.crypto.requests.length > seen);
    expect(await redis().zrange('relay:{bull:refresh}:refresh:repeat', 0, -1)).to.have.members([
      'fees',
      'rates',
    ]);
  };

  it('Redis losing its data (FLUSHALL): the worker re-creates its schedules and rates and fees come back', async () => {
    await start();
    await waitFor(async () => (await redis().exists('relay:rates', 'relay:fees')) === 2);
    await redis().flushall();
    await refreshesAgain();
  });

  it('Redis restarted without persistence: the schedules are re-created after the reconnect', async () => {
    await start();
    await waitFor(async () => (await redis().exists('relay:rates', 'relay:fees')) === 2);
    await testRedis().stop();
    await testRedis().start();
    await refreshesAgain();
  });

  it('the API serves what the worker fetched, starting right after the worker starts', async () => {
    await start();
    const api = await startTestApi(fakes.env());
    try {
      await waitFor(async () => (await get(api.url, '/v1/rates')).status === 200);
      await waitFor(async () => (await get(api.url, '/v1/networkfees')).body.data?.length === 17);
      expect((await get(api.url, '/v1/rates')).body.data.crypto.btc).to.equal(97000.1);
    } finally {
      await api.stop();
    }
  });
});
