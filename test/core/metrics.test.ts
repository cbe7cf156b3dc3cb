import { Queue, Worker } from 'bullmq';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/core/log.js';
import {
  instrumentWorker,
  registry,
  startMetricsServer,
  watchQueueDepth,
  type MetricsHandle,
} from '../../src/core/metrics.js';
import { createRedis } from '../../src/core/redis/clients.js';
import { freePort } from '../../src/core/redis/server.js';
import { get, request, startTestApi, testEnv, waitUntilReady, type TestApi } from '../helpers/api.js';
import { parsePrometheus, valueOf, type Scrape } from '../helpers/prometheus.js';
import { testRedis, testTopology } from '../helpers/redis.js';

const silent = createLogger('error', {}, () => {});

async function startMetrics(overrides: Record<string, string> = {}): Promise<MetricsHandle> {
  const handle = await startMetricsServer(
    loadConfig(testEnv({ METRICS_PORT: String(await freePort()), ...overrides })),
    silent,
  );
  if (!handle) throw new Error('metrics server not started');
  return handle;
}

/** Polls until `check` holds (for effects that follow a request asynchronously), failing after 5 s. */
async function eventually(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('metrics', () => {
  let api: TestApi;
  let metrics: MetricsHandle;

  async function scrape(): Promise<Scrape> {
    const res = await fetch(`${metrics.url}/metrics`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('text/plain; version=0.0.4; charset=utf-8');
    return parsePrometheus(await res.text());
  }

  /** The counters are per process and other tests add to them: each test asserts what its own requests added. */
  function delta(before: Scrape, after: Scrape, name: string, labels: Record<string, string> = {}): number {
    return valueOf(after, name, labels) - valueOf(before, name, labels);
  }

  /** How many GET requests to `route` answered with `status` between the two scrapes. */
  function gets(before: Scrape, after: Scrape, route: string, status: string): number {
    return delta(before, after, 'relay_http_requests_total', { method: 'GET', route, status });
  }

  before(async () => {
    api = await startTestApi({ RATE_LIMIT_POINTS: '3', RATE_LIMIT_WINDOW_SECONDS: '60' });
    metrics = await startMetrics();
  });
  after(async () => {
    await api.stop();
    await metrics.stop();
  });

  describe('HTTP requests', () => {
    it('counts requests by method, route template and status', async () => {
      const before = await scrape();
      expect((await get(api.url, '/v1/services')).status).to.equal(200);
      expect((await get(api.url, '/v1/sync/not%2Fvalid')).status).to.equal(400);
      expect((await get(api.url, '/v1/sync/nobody')).status).to.equal(404);
      expect((await get(api.url, '/healthz')).status).to.equal(200);
      const after = await scrape();

      expect(after.types.get('relay_http_requests_total')).to.equal('counter');
      expect(gets(before, after, '/v1/services', '200')).to.equal(1);
      expect(gets(before, after, '/v1/sync/:id', '400')).to.equal(1);
      expect(gets(before, after, '/v1/sync/:id', '404')).to.equal(1);
      expect(gets(before, after, '/healthz', '200')).to.equal(1);
      // Labels carry the template only: an identity never becomes a label value.
      const routes = after.samples
        .filter((s) => s.name === 'relay_http_requests_total')
        .map((s) => s.labels.route);
      expect(routes.some((route) => route?.includes('nobody') || route?.includes('valid'))).to.equal(false);
    });

    it('an unknown route is counted under "unmatched", not under its path', async () => {
      const before = await scrape();
      expect((await get(api.url, '/v1/no/such/thing')).status).to.equal(404);
      const after = await scrape();
      expect(gets(before, after, 'unmatched', '404')).to.equal(1);
    });

    it('a 405 is counted under its route, not "unmatched"', async () => {
      const before = await scrape();
      const res = await request(api.url, '/v1/sync/someone', { method: 'DELETE' });
      expect(res.status).to.equal(405);
      const after = await scrape();
      const count = (route: string) =>
        delta(before, after, 'relay_http_requests_total', { method: 'DELETE', route, status: '405' });
      expect(count('/v1/sync/:id')).to.equal(1);
      expect(count('unmatched')).to.equal(0);
    });

    it('times requests in a histogram with cumulative buckets', async () => {
      const before = await scrape();
      await get(api.url, '/v1/services');
      await get(api.url, '/v1/services');
      const after = await scrape();

      expect(after.types.get('relay_http_request_duration_seconds')).to.equal('histogram');
      const labels = { method: 'GET', route: '/v1/services', status: '200' };
      expect(delta(before, after, 'relay_http_request_duration_seconds_count', labels)).to.equal(2);
      expect(
        delta(before, after, 'relay_http_request_duration_seconds_bucket', { ...labels, le: '+Inf' }),
      ).to.equal(2);
      expect(delta(before, after, 'relay_http_request_duration_seconds_sum', labels)).to.be.greaterThan(0);
      const buckets = after.samples
        .filter((s) => s.name === 'relay_http_request_duration_seconds_bucket')
        .filter((s) => s.labels.route === '/v1/services' && s.labels.status === '200')
        .map((s) => s.value);
      expect(buckets).to.have.length(12);
      expect(buckets).to.deep.equal([...buckets].sort((a, b) => a - b));
    });

    it('a 429 is counted by status and as a rejection of the global (api) limiter', async () => {
      const before = await scrape();
      for (let i = 0; i < 3; i++) expect((await get(api.url, '/v1/services')).status).to.equal(200);
      expect((await get(api.url, '/v1/services')).status).to.equal(429);
      const after = await scrape();

      expect(after.types.get('relay_rate_limit_rejections_total')).to.equal('counter');
      expect(delta(before, after, 'relay_rate_limit_rejections_total', { limiter: 'api' })).to.equal(1);
      // The global limit answers before routing, so the request has no route template.
      expect(gets(before, after, 'unmatched', '429')).to.equal(1);
      expect(gets(before, after, '/v1/services', '200')).to.equal(3);
    });
  });

  describe('Redis errors', () => {
    it('counts requests answered 503 because Redis is down, and the Redis clients’ errors', async () => {
      const before = await scrape();
      await testRedis().stop();
      try {
        const res = await get(api.url, '/v1/sync/someone');
        expect(res.status).to.equal(503);
        await eventually(
          async () =>
            delta(before, await scrape(), 'relay_redis_client_errors_total', { client: 'store' }) > 0,
        );
      } finally {
        await testRedis().start();
      }
      const after = await scrape();
      expect(delta(before, after, 'relay_redis_unavailable_total')).to.equal(1);
      expect(delta(before, after, 'relay_redis_client_errors_total', { client: 'store' })).to.be.greaterThan(
        0,
      );
      await waitUntilReady(api.url);
    });
  });

  describe('worker jobs', () => {
    const workerRedis = () => createRedis(testTopology(), 'worker');
    let queue: Queue;
    let worker: Worker | undefined;
    let unwatch: () => void;
    const queueSamples = (scrape: Scrape) =>
      scrape.samples.filter((s) => s.name === 'relay_queue_jobs' && s.labels.queue === 'metrics-test');

    beforeEach(() => {
      queue = new Queue('metrics-test', { connection: workerRedis() });
      queue.on('error', () => {});
      unwatch = watchQueueDepth([queue]);
    });
    afterEach(async () => {
      unwatch();
      await worker?.close();
      worker = undefined;
      await queue.close();
    });

    it('counts completed, retried and finally failed attempts, and reports queue depth', async () => {
      const jobs = new Worker(
        'metrics-test',
        async (job) => {
          if (job.name === 'broken' || job.attemptsMade === 0) throw new Error('this attempt fails');
          return 'done';
        },
        { connection: workerRedis() },
      );
      worker = jobs;
      jobs.on('error', () => {});
      instrumentWorker(jobs);
      const settled = new Promise<void>((resolve) => {
        let seen = 0;
        const count = () => ++seen === 3 && resolve();
        jobs.on('completed', count);
        jobs.on('failed', count);
      });
      const before = await scrape();
      await queue.add('flaky', {}, { attempts: 2 });
      await queue.add('broken', {}, { attempts: 1 });
      await settled;
      const after = await scrape();

      const outcome = (name: string) =>
        delta(before, after, 'relay_jobs_total', { queue: 'metrics-test', outcome: name });
      expect([outcome('completed'), outcome('retried'), outcome('failed')]).to.deep.equal([1, 1, 1]);
      expect(after.types.get('relay_queue_jobs')).to.equal('gauge');
      const depth = (state: string) => valueOf(after, 'relay_queue_jobs', { queue: 'metrics-test', state });
      expect(['completed', 'failed', 'waiting', 'active', 'delayed'].map(depth)).to.deep.equal([
        1, 1, 0, 0, 0,
      ]);

      unwatch();
      expect(queueSamples(await scrape())).to.deep.equal([]);
    });

    it('a scrape still answers while Redis is down, leaving out the queue it cannot count', async () => {
      await queue.add('waits', {});
      expect(
        valueOf(await scrape(), 'relay_queue_jobs', { queue: 'metrics-test', state: 'waiting' }),
      ).to.equal(1);
      await testRedis().stop();
      try {
        const during = await scrape();
        expect(queueSamples(during)).to.deep.equal([]);
        expect(during.types.get('relay_queue_jobs')).to.equal('gauge');
      } finally {
        await testRedis().start();
      }
    });
  });

  it('docs/operations.md names exactly the relay_* metrics the registry has', () => {
    const registered = registry
      .getMetricsAsArray()
      .map((m) => m.name)
      .filter((name) => name.startsWith('relay_'));
    const docs = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    const named = [...docs.matchAll(/\brelay_[a-z_]+/g)].map(([name]) =>
      name.replace(/_(bucket|count|sum)$/, ''),
    );
    expect([...new Set(named)].sort()).to.deep.equal(registered.sort());
  });

  it("the pair's stream metrics have exactly their types and labels", () => {
    const wanted: Record<string, [string, string[]]> = {
      relay_stream_appends_total: ['counter', ['direction']],
      relay_stream_recoveries_total: ['counter', ['via', 'path', 'recovered']],
      relay_stream_replayed_total: ['counter', ['path']],
      relay_stream_gap_closes_total: ['counter', ['path']],
      relay_acks_total: ['counter', ['via', 'outcome']],
      relay_receipts_emitted_total: ['counter', []],
      relay_presence_changes_total: ['counter', ['side', 'connected']],
      relay_push_skipped_total: ['counter', ['reason']],
      relay_push_delayed_total: ['counter', []],
      relay_longpoll_waiting: ['gauge', []],
      relay_longpoll_total: ['counter', ['outcome']],
      relay_http_not_modified_total: ['counter', ['route']],
    };
    const found = Object.keys(wanted).map((name) => {
      const metric = registry.getSingleMetric(name) as unknown as { type: string; labelNames?: string[] };
      return [name, [metric?.type, [...(metric?.labelNames ?? [])]]];
    });
    expect(Object.fromEntries(found)).to.deep.equal(wanted);
  });

  describe('build info', () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    const buildInfo = async (overrides: Record<string, string>) => {
      const listener = await startMetrics(overrides);
      try {
        const text = await (await fetch(`${listener.url}/metrics`)).text();
        return parsePrometheus(text).samples.filter((s) => s.name === 'relay_build_info');
      } finally {
        await listener.stop();
      }
    };

    it('relay_build_info is 1, labelled with the package.json version and RELAY_COMMIT', async () => {
      expect(version).to.match(/^\d+\.\d+\.\d+(-dev)?$/);
      expect(await buildInfo({ RELAY_COMMIT: '89ac4a5' })).to.deep.equal([
        { name: 'relay_build_info', labels: { version, commit: '89ac4a5' }, value: 1 },
      ]);
    });

    it('without RELAY_COMMIT the commit is the checkout\'s `git rev-parse HEAD` (else "unknown"), and the earlier commit is gone', async () => {
      const root = fileURLToPath(new URL('../..', import.meta.url));
      const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' });
      // The tests run from a git checkout (CI clones one); from an unpacked tarball the commit is unknown.
      const commit = existsSync(join(root, '.git')) ? head.stdout.trim() : 'unknown';
      expect(commit).to.match(/^([0-9a-f]{40}|unknown)$/);
      await buildInfo({ RELAY_COMMIT: 'earlier' });
      expect(await buildInfo({})).to.deep.equal([
        { name: 'relay_build_info', labels: { version, commit }, value: 1 },
      ]);
    });
  });

  describe('the metrics listener', () => {
    it('answers /healthz for liveness, 404 elsewhere, 405 for other methods', async () => {
      const health = await fetch(`${metrics.url}/healthz`);
      expect(health.status).to.equal(200);
      expect(await health.json()).to.deep.equal({ success: true, data: { status: 'ok' } });
      expect((await fetch(`${metrics.url}/other`)).status).to.equal(404);
      const post = await fetch(`${metrics.url}/metrics`, { method: 'POST' });
      expect([post.status, post.headers.get('allow')]).to.deep.equal([405, 'GET, HEAD']);
    });

    it('METRICS_PORT=0 starts no listener', async () => {
      expect(await startMetricsServer(loadConfig(testEnv({ METRICS_PORT: '0' })), silent)).to.equal(
        undefined,
      );
    });
  });
});
