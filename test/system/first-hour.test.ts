import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { knownEnvVars, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/core/log.js';
import { createRedis } from '../../src/core/redis/clients.js';
import { errorBody, get, startTestApi, testEnv } from '../helpers/api.js';
import { redis } from '../helpers/redis.js';
import { startTopology } from '../helpers/topologies.js';
import { waitFor } from '../helpers/wait.js';
import { startTestWorker } from '../helpers/worker.js';

/** What a newcomer meets in the first hour: a laptop without internet, readable logs, a quiet test run. */
describe('the first hour', () => {
  describe('MARKET_REFRESH=off', () => {
    it('the worker schedules and fetches nothing, and says so once; /v1/rates and /v1/networkfees say why', async () => {
      const worker = await startTestWorker({ MARKET_REFRESH: 'off' });
      const api = await startTestApi({ MARKET_REFRESH: 'off' });
      try {
        const said = worker.logs.map((line) => String(line.msg)).filter((msg) => /market|refresh/.test(msg));
        expect(said).to.deep.equal(['market refresh off (MARKET_REFRESH=off): no rates or fees are fetched']);
        expect(await redis().keys('bull:refresh:*')).to.deep.equal([]);
        const rates = await get(api.url, '/v1/rates');
        expect(rates.status).to.equal(503);
        expect(rates.headers.get('retry-after')).to.equal(null);
        expect(rates.body).to.deep.equal(
          errorBody(
            rates,
            'UNAVAILABLE',
            'Exchange rates are not fetched by this relay (MARKET_REFRESH=off).',
          ),
        );
        const fees = await get(api.url, '/v1/networkfees');
        expect(fees.body).to.deep.equal(
          errorBody(fees, 'UNAVAILABLE', 'Network fees are not fetched by this relay (MARKET_REFRESH=off).'),
        );
      } finally {
        await api.stop();
        await worker.stop();
      }
    });

    it('only on and off are accepted', () => {
      expect(loadConfig(testEnv()).market.refresh).to.equal(true);
      expect(() => loadConfig(testEnv({ MARKET_REFRESH: 'no' }))).to.throw(/MARKET_REFRESH/);
    });
  });

  describe('LOG_FORMAT', () => {
    const at = (format: 'json' | 'pretty') => {
      const lines: string[] = [];
      createLogger('info', { role: 'api' }, (line) => lines.push(line), format)
        .child({ requestId: 'r1' })
        .info('request', { status: 200, path: '/v1/sync/a b' });
      return lines;
    };

    it('json (the default): one JSON object per line', () => {
      expect(loadConfig(testEnv()).logFormat).to.equal('json');
      expect(JSON.parse(at('json')[0]!)).to.include({
        level: 'info',
        msg: 'request',
        role: 'api',
        requestId: 'r1',
      });
    });

    it('pretty: time, level, message, then the fields as key=value', () => {
      expect(loadConfig(testEnv({ LOG_FORMAT: 'pretty' })).logFormat).to.equal('pretty');
      expect(at('pretty')).to.have.length(1);
      expect(at('pretty')[0]).to.match(
        /^\d\d:\d\d:\d\d\.\d{3} INFO {2}request role="api" requestId="r1" status=200 path="\/v1\/sync\/a b"$/,
      );
      expect(() => loadConfig(testEnv({ LOG_FORMAT: 'text' }))).to.throw(/LOG_FORMAT/);
    });
  });

  describe('every variable is written down', () => {
    const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

    it('.env.example names every variable config.ts reads, and no other', () => {
      const named = [...read('.env.example').matchAll(/^(?:# )?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]);
      expect([...new Set(named)].sort()).to.deep.equal(knownEnvVars());
    });

    it("the README's configuration table names every variable", () => {
      const readme = read('README.md');
      expect(knownEnvVars().filter((name) => !readme.includes(`\`${name}\``))).to.deep.equal([]);
    });

    it('the values .env.example sets are valid', () => {
      const set = Object.fromEntries(
        [...read('.env.example').matchAll(/^([A-Z][A-Z0-9_]+)=(.*)$/gm)].map((m) => [m[1]!, m[2]!]),
      );
      expect(() => loadConfig(testEnv(set))).not.to.throw();
    });
  });

  describe('quiet output', () => {
    /** The connections ioredis's failover detector opened to each sentinel (internal, hence the cast). */
    const detectorConnections = (client: unknown) =>
      (client as { connector: { failoverDetector?: { sentinels: { client: { status: string } }[] } } })
        .connector.failoverDetector?.sentinels ?? [];

    it('a sentinel that is down prints no "[ioredis] Unhandled error event"', async function () {
      this.timeout(60_000);
      const topology = await startTopology('sentinel');
      // Port 9 refuses at once: the detector connects to every configured sentinel, this one included.
      const env = { ...topology.env, REDIS_SENTINELS: `${topology.env.REDIS_SENTINELS},127.0.0.1:9` };
      const printed: string[] = [];
      const original = console.error; // eslint-disable-line no-console -- ioredis prints there
      console.error = (...args: unknown[]) => void printed.push(args.map(String).join(' ')); // eslint-disable-line no-console -- captured
      const client = createRedis(loadConfig(testEnv(env)).redis.topology, 'store');
      try {
        await waitFor('the client to be ready', () => client.status === 'ready');
        await waitFor('the detector to have tried every sentinel', () => {
          const connections = detectorConnections(client);
          return (
            connections.length === 4 &&
            connections.every((c) => !['wait', 'connecting'].includes(c.client.status))
          );
        });
        expect(printed.filter((line) => line.includes('[ioredis]'))).to.deep.equal([]);
      } finally {
        console.error = original; // eslint-disable-line no-console -- restored
        client.disconnect();
        await topology.stop();
      }
    });
  });
});
