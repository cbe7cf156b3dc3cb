import { expect } from 'chai';
import { UTXO_CHAINS } from '../../src/core/chains.js';
import { knownEnvVars, loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/core/config/config.js';
import { createLogger } from '../../src/core/log.js';
import { createRedis, type RedisClient } from '../../src/core/redis/clients.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { MarketStore } from '../../src/market/store.js';
import { refreshJobs } from '../../src/market/refresh.js';
import { errorBody, get, startTestApi, testEnv, type TestApi } from '../helpers/api.js';
import type { FakeReply } from '../helpers/fake-upstream.js';
import { FIAT, MarketFakes } from '../helpers/market-fakes.js';
import { redis } from '../helpers/redis.js';

const EXPECTED_CRYPTO = {
  btc: 97000.1,
  eth: 3500.2,
  base: 3500.2,
  ltc: 90,
  flux: 0.5,
  polygon: 0.25,
  pol: 0.25,
  usdt: 1,
  // The wallet app reads Solana's price under its own chain id, beside the symbol.
  sol: 140.5,
  solMainnet: 140.5,
  solDevnet: 0,
  btctestnet: 0,
  btcsignet: 0,
  fluxtestnet: 0,
  sepolia: 0,
  amoy: 0,
};
const EXPECTED_FIAT = { ...FIAT, BTC: 1 / 97000.1, ETH: 1 / 3500.2 };

const fixed = (coin: string, fee: number) => ({
  coin,
  economy: fee,
  normal: fee,
  fast: fee,
  recommended: fee,
});
const evm = (coin: string, base: number, economy: number, normal: number, fast: number) => ({
  coin,
  base,
  economy,
  normal,
  fast,
  recommended: fast,
});
const EXPECTED_FEES = [
  { coin: 'btc', economy: 10, normal: 15, fast: 20, recommended: 20 },
  fixed('btcTestnet', 5),
  fixed('btcSignet', 4),
  { coin: 'ltc', economy: 1, normal: 2, fast: 3, recommended: 3 },
  fixed('doge', 500),
  fixed('zec', 30),
  fixed('bch', 4),
  fixed('flux', 1),
  fixed('fluxTestnet', 1),
  // Ravencoin's minimum relay fee is 1000 sat/B: below it the network refuses a send.
  fixed('rvn', 1050),
  evm('eth', 20, 1.5, 1.65, 1.8),
  evm('sepolia', 2, 1, 1.1, 1.2),
  evm('polygon', 100, 35, 38.5, 42),
  evm('amoy', 60, 30, 30, 30),
  evm('base', 0.01, 0.001, 0.0011, 0.0012),
  evm('bsc', 0.2, 0.1, 0.1, 0.1),
  evm('avax', 4, 1, 1.1, 1.2),
];

/** Drops `updatedAt` after checking it is an ISO timestamp. */
function withoutTimes(entries: { updatedAt: string }[]): object[] {
  return entries.map(({ updatedAt, ...rest }) => {
    expect(new Date(updatedAt).toISOString()).to.equal(updatedAt);
    return rest;
  });
}

describe('GET /v1/rates and GET /v1/networkfees (refreshed by the worker)', () => {
  const fakes = new MarketFakes();
  let api: TestApi;
  let storeRedis: RedisClient;
  let jobs: ReturnType<typeof refreshJobs>;
  let workerLogs: Record<string, unknown>[];
  let env: Record<string, string>;

  before(async () => {
    await fakes.start();
    env = { ...fakes.env(), FEES_FIXED_SAT_VB: '{"doge":500}' };
    api = await startTestApi(env);
    storeRedis = createRedis(api.config.redis.topology, 'store');
  });
  after(async () => {
    storeRedis.disconnect();
    await api.stop();
    await fakes.stop();
  });
  // A fresh worker per test: what a provider's failures log depends on whether it was failing before.
  beforeEach(() => {
    fakes.reset();
    workerLogs = [];
    const config = loadConfig(testEnv(env));
    const log = createLogger('debug', {}, (line) => workerLogs.push(JSON.parse(line)));
    jobs = refreshJobs(config, log, new MarketStore(storeRedis, keysFor(config.keyPrefix)));
  });

  const rates = () => get(api.url, '/v1/rates');
  const fees = () => get(api.url, '/v1/networkfees');
  const failures = () =>
    workerLogs.filter((line) => line.msg === 'market provider failed; keeping the last good value');
  const messages = () => workerLogs.filter((line) => line.level !== 'debug').map((line) => line.msg);

  it('503 for both before the first fetch', async () => {
    const r = await rates();
    expect(r.status).to.equal(503);
    expect(r.headers.get('retry-after')).to.equal('10');
    expect(r.body).to.deep.equal(
      errorBody(r, 'UNAVAILABLE', 'Exchange rates have not been fetched yet; retry shortly.'),
    );
    const f = await fees();
    expect(f.status).to.equal(503);
    expect(f.body).to.deep.equal(
      errorBody(f, 'UNAVAILABLE', 'Network fees have not been fetched yet; retry shortly.'),
    );
  });

  it('rates: USD prices by lowercase chain id and symbol, fiat per 1 USD plus BTC and ETH', async () => {
    await jobs.rates();
    const res = await rates();
    expect(res.status).to.equal(200);
    const { fiat, crypto, updatedAt } = res.body.data;
    expect(fiat).to.deep.equal(EXPECTED_FIAT);
    expect(crypto).to.deep.equal(EXPECTED_CRYPTO);
    expect(Date.now() - Date.parse(updatedAt)).to.be.within(0, 5000);

    expect(fakes.crypto.requests).to.have.length(1);
    const url = new URL(fakes.crypto.requests[0]!.path, 'http://x');
    expect(url.pathname).to.equal('/simple/price');
    expect(url.searchParams.get('vs_currencies')).to.equal('usd');
    const ids = url.searchParams.get('ids')!.split(',');
    expect(ids).to.include.members(['bitcoin', 'litecoin', 'dogecoin', 'zcash', 'bitcoin-cash', 'zelcash']);
    expect(ids).to.include.members([
      'ravencoin',
      'ethereum',
      'binancecoin',
      'avalanche-2',
      'tether',
      'usd-coin',
    ]);
    expect(ids.length).to.be.greaterThan(100);
    expect(fakes.fiat.requests.map((r) => r.path)).to.deep.equal(['/v6/latest/USD']);
  });

  it('rates stay 503 while only one of the two providers ever answered; no "last good value" is claimed', async () => {
    fakes.crypto.respond(() => ({ status: 500 }));
    await jobs.rates();
    expect((await rates()).status).to.equal(503);
    expect(failures()).to.deep.equal([]);
    const failed = workerLogs.filter((line) => line.msg === 'market provider failed; no value yet');
    expect(failed.map((line) => [line.level, line.provider, line.err])).to.deep.equal([
      ['warn', 'crypto', `${new URL(fakes.crypto.url).host}: HTTP 500`],
    ]);
  });

  it('a provider failing at every refresh is logged once, then once more when it recovers', async () => {
    await jobs.rates();
    fakes.crypto.respond(() => ({ status: 502 }));
    for (let i = 0; i < 5; i++) await jobs.rates();
    expect(messages()).to.deep.equal(['market provider failed; keeping the last good value']);
    fakes.reset();
    await jobs.rates();
    await jobs.rates();
    expect(messages()).to.deep.equal([
      'market provider failed; keeping the last good value',
      'market provider recovered',
    ]);
    expect(workerLogs.at(-1)).to.include({ provider: 'crypto', occurrences: 5 });
  });

  it('while a provider keeps failing, a summary with the count once per LOG_SUMMARY_SECONDS', async () => {
    const log = createLogger('debug', {}, (line) => workerLogs.push(JSON.parse(line)));
    const config = loadConfig(testEnv({ ...env, LOG_SUMMARY_SECONDS: '1' }));
    jobs = refreshJobs(config, log, new MarketStore(storeRedis, keysFor(config.keyPrefix)));
    fakes.fiat.respond(() => ({ drop: true }));
    await jobs.rates();
    await jobs.rates();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await jobs.rates();
    await jobs.rates();
    expect(messages()).to.deep.equal([
      'market provider failed; no value yet',
      'market provider still failing',
    ]);
    expect(workerLogs.at(-1)).to.include({ provider: 'fiat', occurrences: 3 });
  });

  it('a failing provider keeps the last good rates (updatedAt shows their age)', async () => {
    await jobs.rates();
    const before = (await rates()).body.data;
    fakes.crypto.respond(() => ({ status: 502 }));
    fakes.fiat.respond(() => ({ drop: true }));
    await jobs.rates();
    expect((await rates()).body.data).to.deep.equal(before);
    expect(failures()).to.have.length(2);
  });

  const answer = (reply: FakeReply) => () => fakes.crypto.respond(() => reply);
  const badPriceAnswers: [string, string, () => void][] = [
    [
      'a non-numeric price',
      'price of bitcoin',
      answer({ body: { bitcoin: { usd: 'lots' }, ethereum: { usd: 1 } } }),
    ],
    [
      'a negative price',
      'price of bitcoin',
      answer({ body: { bitcoin: { usd: -1 }, ethereum: { usd: 1 } } }),
    ],
    ['an answer without bitcoin', 'lacks bitcoin', answer({ body: { ethereum: { usd: 1 } } })],
    ['an array', 'not an object', answer({ body: [] })],
    ['HTML', 'not JSON', answer({ body: '<html>Too Many Requests</html>' })],
    ['an HTTP 429', 'HTTP 429', answer({ status: 429, body: { status: { error_code: 429 } } })],
    [
      'a 2 MB answer',
      'larger than the limit',
      answer({ body: { bitcoin: { usd: 1 }, ethereum: { usd: 1 }, pad: 'x'.repeat(2e6) } }),
    ],
    ['an answer slower than the timeout', 'ETIMEDOUT', answer({ body: {}, delayMs: 1000 })],
  ];
  for (const [label, logged, breakIt] of badPriceAnswers) {
    it(`prices: ${label} changes nothing and is logged`, async () => {
      await jobs.rates();
      const good = await redis().hget('relay:rates', 'crypto');
      breakIt();
      await jobs.rates();
      expect(await redis().hget('relay:rates', 'crypto')).to.equal(good);
      expect(failures().map((line) => line.provider)).to.deep.equal(['crypto']);
      expect(failures()[0]!.err).to.include(logged);
    });
  }

  it('fiat: an answer without a rates object changes nothing', async () => {
    await jobs.rates();
    const good = await redis().hget('relay:rates', 'fiat');
    fakes.fiat.respond(() => ({ body: { result: 'error', 'error-type': 'quota' } }));
    await jobs.rates();
    expect(await redis().hget('relay:rates', 'fiat')).to.equal(good);
    expect(failures().map((line) => line.provider)).to.deep.equal(['fiat']);
  });

  it('fees: sat/vB for UTXO chains, gwei for EVM chains, configured values for the rest, in chain order', async () => {
    await jobs.fees();
    const res = await fees();
    expect(res.status).to.equal(200);
    expect(res.body.success).to.equal(true);
    expect(withoutTimes(res.body.data)).to.deep.equal(EXPECTED_FEES);
    expect(fakes.btc.requests.map((r) => r.path)).to.deep.equal(['/api/v1/fees/recommended']);
    expect(fakes.ltc.requests.map((r) => r.path)).to.deep.equal(['/api/v1/fees/recommended']);
    expect(fakes.rpc.requests).to.have.length(7);
    const ethCall = fakes.rpc.requests.find((r) => r.path === '/eth')!.json as {
      method: string;
      params: unknown[];
    }[];
    expect(ethCall.map((c) => [c.method, c.params])).to.deep.equal([
      ['eth_getBlockByNumber', ['latest', false]],
      ['eth_gasPrice', []],
      ['eth_maxPriorityFeePerGas', []],
    ]);
  });

  it('fees: each chain keeps its last good value when its provider fails; the others update', async () => {
    await jobs.fees();
    type Entry = { coin: string; updatedAt: string };
    const first = (await fees()).body.data as Entry[];
    await new Promise((resolve) => setTimeout(resolve, 5));
    fakes.btc.respond(() => ({ status: 500 }));
    fakes.rpc.respond((req) =>
      req.path === '/eth' ? { body: { jsonrpc: '2.0', id: 0, result: null } } : { drop: true },
    );
    fakes.ltc.respond(() => ({ body: { fastestFee: 7, halfHourFee: 6, hourFee: 5 } }));
    await jobs.fees();
    const second = (await fees()).body.data as Entry[];
    const byCoin = (list: Entry[], coin: string) => list.find((e) => e.coin === coin);
    for (const coin of ['btc', 'eth', 'polygon', 'bsc'])
      expect(byCoin(second, coin)).to.deep.equal(byCoin(first, coin));
    expect(byCoin(second, 'ltc')).to.include({ economy: 5, normal: 6, fast: 7, recommended: 7 });
    expect(byCoin(second, 'ltc')!.updatedAt > byCoin(first, 'ltc')!.updatedAt).to.equal(true);
    expect(failures()).to.have.length(8);
  });

  it('fees: a malformed EVM answer is one failed chain, not a failed refresh', async () => {
    fakes.rpc.respond((req) =>
      req.path === '/polygon'
        ? { body: [{ jsonrpc: '2.0', id: 1, result: 'not-hex' }] }
        : { body: 'x'.repeat(2e6) },
    );
    fakes.btc.respond(() => ({ body: { fastestFee: '20' } }));
    await jobs.fees();
    const coins = withoutTimes((await fees()).body.data).map((e) => (e as { coin: string }).coin);
    expect(coins).to.deep.equal(UTXO_CHAINS.filter((chain) => chain !== 'btc'));
    expect(messages()).to.deep.equal(Array(8).fill('market provider failed; no value yet'));
  });
});

describe('market configuration', () => {
  it('merges fee floors and fixed fees over the defaults', () => {
    const { market } = loadConfig({
      EVM_PRIORITY_FEE_FLOOR_GWEI: '{"eth":0.5}',
      FEES_FIXED_SAT_VB: '{"doge":500,"zec":10}',
      UPSTREAM_TIMEOUT_MS: '2500',
    });
    expect(market.priorityFeeFloorGwei).to.include({ eth: 0.5, polygon: 30, bsc: 0.1 });
    expect(market.fixedFees).to.include({ doge: 500, zec: 10, bch: 4, rvn: 1050 });
    expect(market.upstreamTimeoutMs).to.equal(2500);
  });

  const bad: [Record<string, string>, string][] = [
    [{ UPSTREAM_TIMEOUT_MS: '6000' }, 'UPSTREAM_TIMEOUT_MS must be an integer from 50 to 5000 (got "6000")'],
    [
      { EVM_PRIORITY_FEE_FLOOR_GWEI: '{"solana":1}' },
      'EVM_PRIORITY_FEE_FLOOR_GWEI has an unknown chain "solana"',
    ],
    [
      { EVM_PRIORITY_FEE_FLOOR_GWEI: '{"eth":"1"}' },
      'EVM_PRIORITY_FEE_FLOOR_GWEI.eth must be a non-negative number',
    ],
    [{ FEES_FIXED_SAT_VB: '{"btc":5}' }, 'FEES_FIXED_SAT_VB has an unknown chain "btc"'],
    [{ FEES_FIXED_SAT_VB: '{"doge":-1}' }, 'FEES_FIXED_SAT_VB.doge must be a non-negative number'],
    [{ FEES_FIXED_SAT_VB: '[1]' }, 'FEES_FIXED_SAT_VB must be a JSON object'],
  ];
  for (const [env, message] of bad) {
    it(`refuses ${JSON.stringify(env)}`, () => {
      expect(() => loadConfig(env)).to.throw(ConfigError, message);
    });
  }

  it('lists the new variables among the known ones', () => {
    expect(knownEnvVars()).to.include.members([
      'UPSTREAM_TIMEOUT_MS',
      'EVM_PRIORITY_FEE_FLOOR_GWEI',
      'FEES_FIXED_SAT_VB',
    ]);
  });
});
