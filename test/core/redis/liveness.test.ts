import { expect } from 'chai';
import { Queue } from 'bullmq';
import { loadConfig } from '../../../src/config.js';
import { ConfigError } from '../../../src/core/config/config.js';
import { createLogger } from '../../../src/core/log.js';
import { registry } from '../../../src/core/metrics.js';
import { encodeIntent } from '../../../src/push/intent.js';
import { PUSH_QUEUE } from '../../../src/push/jobs.js';
import { queuePrefix } from '../../../src/core/queue/prefix.js';
import { createRedis } from '../../../src/core/redis/clients.js';
import { keysFor } from '../../../src/core/redis/keys.js';
import { PushIntake } from '../../../src/push/intake.js';
import { get, post, startTestApi, testEnv, type TestApi } from '../../helpers/api.js';
import { parsePrometheus, valueOf } from '../../helpers/prometheus.js';
import { redis, testRedis, testTopology } from '../../helpers/redis.js';
import {
  closedAfterEach,
  connected,
  joinsHandled,
  joinsSettled,
  type TestClient,
} from '../../helpers/sockets.js';
import { TcpProxy } from '../../helpers/tcp-proxy.js';
import { waitFor } from '../../helpers/wait.js';

/** Short, so the tests run in seconds; the default is 10 s. */
const INTERVAL_MS = 1000;
/** The documented bound: a silent connection is noticed within two intervals (a PING, its timeout) and replaced. */
const BOUND_MS = 3 * INTERVAL_MS;
const NOT_ANSWERING = 'Redis connection not answering; replacing it';

const keys = keysFor('relay:');
const client = closedAfterEach();

async function metric(name: string, labels: Record<string, string>): Promise<number> {
  return valueOf(parsePrometheus(await registry.metrics()), name, labels);
}

const failures = (client: string) => metric('relay_redis_liveness_failures_total', { client });

async function store(api: TestApi, wkIdentity: string, action: string): Promise<unknown> {
  const res = await post(api.url, '/v1/action', {
    chain: 'btc',
    wkIdentity,
    action,
    payload: 'aa',
    path: '0-0',
  });
  expect(res.status).to.equal(200);
  return res.body.data;
}

/** A key socket on `api` in `room`, its join handled. */
async function joinedKey(api: TestApi, room: string): Promise<TestClient> {
  const before = await joinsHandled();
  const made = client(api.url, 'key', { wkIdentity: room });
  await connected(made);
  await joinsSettled(before, 1);
  return made;
}

const readiness = async (api: TestApi) => (await get(api.url, '/readyz')).status;

/** Waits until `api`'s readiness turns 503; how long that took from `since`. */
async function notReadyAfter(api: TestApi, since: number): Promise<number> {
  await waitFor('readiness 503', async () => (await readiness(api)) === 503, BOUND_MS + 5000);
  return Date.now() - since;
}

describe('liveness of the long-lived Redis connections (docs/operations.md#connection-liveness)', () => {
  let proxy: TcpProxy;
  /** Pod a reaches Redis directly; pod b through the proxy, whose connections a test freezes. */
  let a: TestApi;
  let b: TestApi;
  before(async () => {
    proxy = await TcpProxy.start(testRedis().port);
    a = await startTestApi({ REDIS_LIVENESS_INTERVAL_MS: String(INTERVAL_MS) });
    b = await startTestApi({ REDIS_URL: proxy.url, REDIS_LIVENESS_INTERVAL_MS: String(INTERVAL_MS) });
  });
  after(async () => {
    await a.stop();
    await b.stop();
    await proxy.stop();
  });
  afterEach(async () => {
    await proxy.restore();
    await waitFor('pod b ready', async () => (await readiness(b)) === 200, BOUND_MS + 5000);
  });

  const warnings = (api: TestApi) =>
    api.logs
      .filter((line) => line.msg === NOT_ANSWERING)
      .map(({ level, client, waitedMs }) => ({ level, client, waitedMs }));

  /**
   * The path to Redis stops forwarding one of pod b's adapter connections without closing it, and takes no new
   * one until restored (the replacement waits, so readiness holds its 503). A request stored through `storer`
   * meanwhile must reach `key` (on the other pod, or on b) once the connection is replaced, then a live one.
   */
  async function silentAdapterConnection(
    client: 'socketSub' | 'socketPub',
    key: TestClient,
    storer: TestApi,
    room: string,
  ): Promise<void> {
    const before = await failures(client);
    const warned = warnings(b).length;
    expect(proxy.freeze(client === 'socketSub' ? 'relay-socket-sub' : 'relay-socket-pub')).to.equal(1);
    const frozenAt = Date.now();
    proxy.refuse();
    const meanwhile = await store(storer, room, 'wksigningrequest');
    expect(await notReadyAfter(b, frozenAt)).to.be.below(BOUND_MS);
    expect(await failures(client)).to.equal(before + 1);
    expect(warnings(b).slice(warned)).to.deep.equal([{ level: 'warn', client, waitedMs: INTERVAL_MS }]);
    expect(key.received).to.deep.equal([]);

    await proxy.restore();
    await waitFor('pod b ready again', async () => (await readiness(b)) === 200, BOUND_MS);
    await waitFor('the request stored meanwhile', () => key.received.length === 1);
    const next = await store(storer, room, 'tx');
    await waitFor('the next event', () => key.received.length === 2);
    expect(key.received).to.deep.equal([
      { event: 'wksigningrequest', data: meanwhile },
      { event: 'tx', data: next },
    ]);
    expect(key.disconnects).to.deep.equal([]);
    expect(b.logs.filter((line) => line.level === 'error')).to.deep.equal([]);
  }

  it('a subscriber that went silent: readiness 503 within the bound, replaced, the gap replayed, then live events again', async () => {
    // Stored through pod a while pod b hears nothing: pod b's replay after the new subscription brings it.
    await silentAdapterConnection('socketSub', await joinedKey(b, 'live1'), a, 'live1');
  });

  it('a publisher that went silent: readiness 503 within the bound, replaced, and the notice it held reaches the other pod', async () => {
    // Stored through pod b: its notice waits on the silent connection, and ioredis sends it again on the new one.
    await silentAdapterConnection('socketPub', await joinedKey(a, 'live2'), b, 'live2');
  });

  it('the push intake blocked on a silent connection: replaced within the bound, and it takes the intents appended meanwhile', async () => {
    const queueClient = createRedis(testTopology(), 'worker');
    const queue = new Queue(PUSH_QUEUE, {
      connection: queueClient,
      prefix: queuePrefix('relay:', PUSH_QUEUE),
    });
    const logs: Record<string, unknown>[] = [];
    const intake = new PushIntake({
      redis: createRedis({ kind: 'standalone', url: proxy.url, explicit: true }, 'worker'),
      keys,
      queue,
      jobOptions: {},
      claimIdleMs: 60_000,
      livenessIntervalMs: INTERVAL_MS,
      log: createLogger('debug', {}, (line) => logs.push(JSON.parse(line))),
    });
    const before = await failures('pushIntake');
    const taken = await metric('relay_push_intents_total', { outcome: 'no_tokens' });
    intake.start();
    try {
      await waitFor('the intake’s group', async () => (await redis().exists(keys.pushIntents)) === 1);
      // Its connection is the one that created the group: that command is among its first bytes.
      expect(proxy.freeze('push-intake')).to.equal(1);
      const frozenAt = Date.now();
      const expiresAt = new Date(Date.now() + 60_000).toISOString();
      const createdAt = new Date().toISOString();
      await redis().xadd(
        keys.pushIntents,
        '*',
        ...encodeIntent({ id: 'live3', wkIdentity: 'live3', action: 'tx', expiresAt, createdAt }),
      );
      await waitFor(
        'the intent taken',
        async () => (await redis().xlen(keys.pushIntents)) === 0,
        BOUND_MS + 5000,
      );
      const warned = logs.filter((line) => line.msg === NOT_ANSWERING);
      expect(warned.map(({ level, client }) => ({ level, client }))).to.deep.equal([
        { level: 'warn', client: 'pushIntake' },
      ]);
      // Noticed within the bound, plus one read's BLOCK (1 s) a PING may wait behind.
      expect(Date.parse(warned[0]!.time as string) - frozenAt).to.be.below(BOUND_MS + 1000);
      expect(await failures('pushIntake')).to.equal(before + 1);
      expect(await metric('relay_push_intents_total', { outcome: 'no_tokens' })).to.equal(taken + 1);
    } finally {
      await intake.stop();
      await queue.close();
      queueClient.disconnect();
    }
  });

  it('REDIS_LIVENESS_INTERVAL_MS: from 100 ms to 10 s (the 30 s bound), default 10 s', () => {
    expect(loadConfig(testEnv()).redis.livenessIntervalMs).to.equal(10_000);
    for (const bad of ['50', '10001', '1s']) {
      expect(() => loadConfig(testEnv({ REDIS_LIVENESS_INTERVAL_MS: bad })))
        .to.throw(ConfigError)
        .with.property(
          'message',
          `REDIS_LIVENESS_INTERVAL_MS must be an integer from 100 to 10000 (got "${bad}")`,
        );
    }
  });
});
