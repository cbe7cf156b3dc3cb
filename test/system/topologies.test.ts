import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/core/config/config.js';
import { WriteAck } from '../../src/core/redis/write-ack.js';
import { MarketStore } from '../../src/market/store.js';
import { TokenStore } from '../../src/push/tokens/store.js';
import { errorBody, get, post, startTestApi, testEnv, type TestApi } from '../helpers/api.js';
import { createRedis, waitReady } from '../../src/core/redis/clients.js';
import {
  TOPOLOGIES,
  keys,
  shardSubscribers,
  startTopology,
  syncRecord,
  type TestTopology,
} from '../helpers/topologies.js';
import { waitFor } from '../helpers/wait.js';
import { startTestWorker } from '../helpers/worker.js';
import { FakeFcm } from '../helpers/fake-fcm.js';
import { connectClient, connected, joinsHandled, joinsSettled } from '../helpers/sockets.js';
import { queueKey } from '../../src/core/queue/prefix.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { PushThrottle } from '../../src/push/throttle.js';
import { pairOf, signed } from '../helpers/signing.js';
import { PUSH_QUEUE, pushJobId } from '../../src/push/jobs.js';

describe('Redis topology configuration', () => {
  it('two topologies at once are a start-up error naming the variables', () => {
    expect(() => loadConfig({ REDIS_URL: 'redis://a:1', REDIS_CLUSTER_NODES: 'b:2' })).to.throw(
      ConfigError,
      'REDIS_URL and REDIS_CLUSTER_NODES are set: configure exactly one Redis topology',
    );
    expect(() =>
      loadConfig({ REDIS_SENTINELS: 'a:1', REDIS_SENTINEL_NAME: 'm', REDIS_CLUSTER_NODES: 'b:2' }),
    ).to.throw('REDIS_SENTINELS and REDIS_CLUSTER_NODES are set');
  });

  it('reads each topology with its credentials', () => {
    expect(
      loadConfig({
        REDIS_SENTINELS: 'a:26379, b:26380',
        REDIS_SENTINEL_NAME: 'm',
        REDIS_SENTINEL_PASSWORD: 'sp',
        REDIS_PASSWORD: 'p',
      }).redis.topology,
    ).to.deep.equal({
      kind: 'sentinel',
      sentinels: [
        { host: 'a', port: 26379 },
        { host: 'b', port: 26380 },
      ],
      name: 'm',
      sentinelPassword: 'sp',
      username: undefined,
      password: 'p',
      tls: false,
    });
    expect(
      loadConfig({ REDIS_CLUSTER_NODES: 'c:7000', REDIS_PASSWORD: 'p', REDIS_TLS: 'true' }).redis,
    ).to.deep.equal({
      topology: {
        kind: 'cluster',
        nodes: [{ host: 'c', port: 7000 }],
        username: undefined,
        password: 'p',
        tls: true,
      },
      waitReplicas: 0,
      waitTimeoutMs: 500,
      livenessIntervalMs: 10_000,
    });
    expect(loadConfig({ REDIS_URL: 'rediss://u:p@h:6380', REDIS_WAIT_REPLICAS: '1' }).redis).to.deep.equal({
      topology: { kind: 'standalone', url: 'rediss://u:p@h:6380', explicit: true },
      waitReplicas: 1,
      waitTimeoutMs: 500,
      livenessIntervalMs: 10_000,
    });
  });

  for (const [env, message] of [
    [{ REDIS_SENTINELS: 'a:1' }, 'REDIS_SENTINEL_NAME is required with REDIS_SENTINELS'],
    [
      { REDIS_CLUSTER_NODES: 'a' },
      'REDIS_CLUSTER_NODES must be a list of host:port separated by commas (got "a")',
    ],
    [
      { REDIS_WAIT_TIMEOUT_MS: '5000' },
      'REDIS_WAIT_TIMEOUT_MS must be an integer from 1 to 1000 (got "5000")',
    ],
  ] as const) {
    it(`rejects ${JSON.stringify(env)}`, () => {
      expect(() => loadConfig(env)).to.throw(ConfigError, message);
    });
  }
});

/**
 * The same behaviour on a single Redis, a Sentinel group (master, replica, 3 sentinels) and a 6-node cluster
 * (3 masters, 3 replicas): stores, routes, Lua scripts, queues, the scheduler and the rate limiter. Writes are
 * WAIT-confirmed by one replica where there is one.
 */
for (const name of TOPOLOGIES) {
  describe(`on a ${name} Redis`, function () {
    this.timeout(30_000);
    const waitReplicas = name === 'standalone' ? '0' : '1';
    let topology: TestTopology;
    let api: TestApi;
    let env: Record<string, string>;

    before(async () => {
      topology = await startTopology(name);
      // The longest WAIT the relay allows: these tests are about routing, not about a slow replica.
      env = {
        ...topology.env,
        REDIS_WAIT_REPLICAS: waitReplicas,
        REDIS_WAIT_TIMEOUT_MS: '1000',
        SUBMISSIONS_PER_DAY: '1000',
      };
      api = await startTestApi(env);
    });
    after(async () => {
      await api?.stop();
      await topology?.stop();
    });

    it('sync: POST then GET returns the record; Redis holds it with its TTL', async () => {
      const id = `${name}-wallet`;
      const res = await post(api.url, '/v1/sync', syncRecord(id));
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ success: true, data: syncRecord(id) });
      expect(JSON.parse((await topology.admin.get(keys.sync(id)))!)).to.deep.equal(syncRecord(id));
      expect(await topology.admin.ttl(keys.sync(id))).to.be.within(890, 900);
      const read = await get(api.url, `/v1/sync/${id}`);
      expect(read.body).to.deep.equal({ success: true, data: syncRecord(id) });
      // The read-grace script ran on the key's node.
      expect(await topology.admin.ttl(keys.sync(id))).to.be.within(110, 120);
    });

    it('action: POST then GET returns the record; a GET naming its ETag is 304 and counts against the limit', async () => {
      const request = {
        chain: 'btc',
        wkIdentity: `${name}-pair`,
        action: 'tx',
        payload: '0200abff',
        path: '0-0',
      };
      const res = await post(api.url, '/v1/action', request);
      expect(res.status).to.equal(200);
      const read = await get(api.url, `/v1/action/${name}-pair`);
      expect(read.body).to.deep.equal(res.body);
      expect(JSON.parse((await topology.admin.get(keys.action(`${name}-pair`)))!)).to.deep.equal(
        res.body.data,
      );
      const tag = read.headers.get('etag')!;
      const unchanged = await get(api.url, `/v1/action/${name}-pair`, { 'If-None-Match': tag });
      expect(unchanged.status).to.equal(304);
      expect(unchanged.text).to.equal('');
      expect(unchanged.headers.get('etag')).to.equal(tag);
      expect(Number(unchanged.headers.get('ratelimit-remaining'))).to.equal(
        Number(read.headers.get('ratelimit-remaining')) - 1,
      );
    });

    it('records spread over every master', async () => {
      const ids = Array.from({ length: 30 }, (_, i) => `${name}-spread-${i}`);
      for (const id of ids) expect((await post(api.url, '/v1/sync', syncRecord(id))).status).to.equal(200);
      const masters = await topology.masters();
      expect(masters).to.have.length(name === 'cluster' ? 3 : 1);
      const perMaster = await Promise.all(masters.map((m) => m.keys(`relay:sync:${name}-spread-*`)));
      for (const held of perMaster) expect(held.length).to.be.greaterThan(0);
      expect(perMaster.flat()).to.have.members(ids.map((id) => keys.sync(id)));
    });

    it('tokens: a token moved to another pair is delivered only there, even if a stale entry is left behind', async () => {
      const [a, b] = [`${name}-pairA`, `${name}-pairB`];
      await post(api.url, '/v1/token', { wkIdentity: a, keyToken: 'moving', walletToken: 'wa' });
      const moved = await post(api.url, '/v1/token', { wkIdentity: b, keyToken: 'moving' });
      expect(moved.status).to.equal(200);
      expect(moved.body.data).to.deep.equal({ wkIdentity: b, keyTokens: 1, walletTokens: 0 });
      expect(await topology.admin.zrange(keys.tokens(a, 'key'), 0, -1)).to.deep.equal([]);
      expect(await topology.admin.zrange(keys.tokens(a, 'wallet'), 0, -1)).to.deep.equal(['wa']);
      expect(await topology.admin.get(keys.tokenOwner('key', 'moving'))).to.equal(b);

      const store = new TokenStore(topology.admin, keys, WriteAck.none);
      // A move interrupted before the old pair's set was cleaned (a 503 half-way): ownership still decides.
      await topology.admin.zadd(keys.tokens(a, 'key'), Date.now(), 'moving');
      expect(await store.tokensFor(a, 'key')).to.deep.equal([]);
      expect(await store.tokensFor(b, 'key')).to.deep.equal(['moving']);
      expect(await store.tokensFor(a, 'wallet')).to.deep.equal(['wa']);

      // Removing from the old pair leaves the new owner's entry alone; from the owner it releases it.
      await store.remove(a, 'key', ['moving']);
      expect(await topology.admin.get(keys.tokenOwner('key', 'moving'))).to.equal(b);
      await store.remove(b, 'key', ['moving']);
      expect(await topology.admin.exists(keys.tokenOwner('key', 'moving'))).to.equal(0);
      expect(await topology.admin.exists(keys.tokens(b, 'key'))).to.equal(0);
    });

    if (waitReplicas !== '0') {
      it('a token move is confirmed by one WAIT per master it wrote to, not one per key', async () => {
        const [a, b] = [`${name}-waitA`, `${name}-waitB`];
        expect(
          (await post(api.url, '/v1/token', { wkIdentity: a, keyToken: 'k1', walletToken: 'w1' })).status,
        ).to.equal(200);
        const masters = await topology.masters();
        const waits = () =>
          Promise.all(
            masters.map(async (master) =>
              Number(/^cmdstat_wait:calls=(\d+)/m.exec(await master.info('commandstats'))?.[1] ?? 0),
            ),
          );
        const before = await waits();
        // Owner entries, epochs and both pairs' sets: ten keys on up to three masters.
        const moved = await post(api.url, '/v1/token', { wkIdentity: b, keyToken: 'k1', walletToken: 'w1' });
        expect(moved.status).to.equal(200);
        const sent = (await waits()).map((calls, i) => calls - before[i]!);
        expect(Math.max(...sent)).to.equal(1);
      });
    }

    it('tokens: concurrent moves of one token, in any interleaving, leave it in exactly the set its owner names', async function () {
      this.timeout(120_000);
      // Two pods' worth of clients from the relay's own factory, so the steps of concurrent moves interleave freely.
      const clients = [0, 1].map(() => createRedis(loadConfig(testEnv(env)).redis.topology, 'store'));
      const stores = clients.map((client) => new TokenStore(client, keys, WriteAck.none));
      const register = (i: number, wkIdentity: string, token: string) =>
        stores[i % 2]!.save({ wkIdentity, keyToken: token });
      /** Where the token is: its owner entry, the sets holding it, the pairs delivery would reach. */
      const placement = async (token: string, pairs: string[]) => ({
        owner: await topology.admin.get(keys.tokenOwner('key', token)),
        held: (
          await Promise.all(pairs.map((pair) => topology.admin.zscore(keys.tokens(pair, 'key'), token)))
        ).flatMap((score, i) => (score === null ? [] : [pairs[i]])),
        delivered: (await Promise.all(pairs.map((pair) => stores[0]!.tokensFor(pair, 'key')))).flatMap(
          (tokens, i) => (tokens.includes(token) ? [pairs[i]] : []),
        ),
      });
      try {
        await Promise.all(clients.map((client) => waitReady(client, 10_000)));
        const misplaced: string[] = [];
        const check = async (token: string, pairs: string[]) => {
          const placed = await placement(token, pairs);
          if (
            placed.owner === null ||
            placed.held.join() !== placed.owner ||
            placed.delivered.join() !== placed.owner
          )
            misplaced.push(`${token}: ${JSON.stringify(placed)}`);
        };
        // Held by X, registered at once to Y and back to X: 200 trials, in both issue orders.
        for (let trial = 0; trial < 200; trial++) {
          const [x, y, token] = [`${name}-x${trial}`, `${name}-y${trial}`, `swap-${trial}`];
          await register(0, x, token);
          const moves = [() => register(trial, y, token), () => register(trial + 1, x, token)];
          if (trial % 2 === 1) moves.reverse();
          await Promise.all(moves.map((move) => move()));
          await check(token, [x, y]);
        }
        // 40 parallel alternating registrations, 10 times over.
        for (let round = 0; round < 10; round++) {
          const [x, y, token] = [`${name}-ax${round}`, `${name}-ay${round}`, `alternating-${round}`];
          await Promise.all(Array.from({ length: 40 }, (_, i) => register(i, i % 2 === 0 ? x : y, token)));
          await check(token, [x, y]);
        }
        expect(misplaced).to.deep.equal([]);
      } finally {
        await Promise.all(clients.map((client) => client.quit()));
      }
    });

    it('market data and the tokeninfo cache', async () => {
      const market = new MarketStore(topology.admin, keys);
      await market.saveRatesPart('crypto', { btc: 50_000, eth: 2_000 }, new Date('2026-01-01T00:00:00Z'));
      await market.saveRatesPart('fiat', { EUR: 0.9 }, new Date('2026-01-01T00:00:01Z'));
      const fees = [
        {
          coin: 'btc',
          economy: 1,
          normal: 2,
          fast: 3,
          recommended: 2,
          updatedAt: '2026-01-01T00:00:00.000Z',
        },
      ];
      await market.saveFees(fees);
      const address = `0x${'ab'.repeat(20)}`;
      const token = { network: 'eth', address, name: 'T', symbol: 'T', decimals: 6, logo: null };
      await market.saveToken('eth', address, token);
      expect((await get(api.url, '/v1/rates')).body.data.fiat).to.deep.equal({
        EUR: 0.9,
        BTC: 1 / 50_000,
        ETH: 1 / 2_000,
      });
      expect((await get(api.url, '/v1/networkfees')).body.data).to.deep.equal(fees);
      expect((await get(api.url, `/v1/tokeninfo/eth/0x${'AB'.repeat(20)}`)).body).to.deep.equal({
        success: true,
        data: token,
      });
    });

    it('queue: a submission is queued, WAIT-confirmed and delivered by the worker; the scheduler runs', async () => {
      const worker = await startTestWorker(env);
      try {
        const form = { name: 'Ann', email: 'ann@example.com', message: `hi ${name}` };
        // A 503 is WAIT seeing too few replicas in time: the client retries, and the same submission keeps its job.
        const res = await waitFor('the submission acknowledged', async () => {
          const answer = await post(api.url, '/v1/contact', form);
          return answer.status === 503 ? undefined : answer;
        });
        expect(res.status).to.equal(200);
        const { id } = res.body.data;
        await waitFor('the job to be delivered', () =>
          topology.admin.zscore('relay:{bull:support}:support:completed', id).then((score) => score !== null),
        );
        // The worker declares its schedulers once it reaches Redis, without holding up its start.
        const schedulers = () => topology.admin.zrange('relay:{bull:refresh}:refresh:repeat', 0, -1);
        await waitFor('the refresh schedulers', async () => (await schedulers()).length === 2);
        expect(await schedulers()).to.have.members(['fees', 'rates']);
      } finally {
        await worker.stop();
      }
    });

    it('push: an action reaches the pair’s current tokens through the push queue, never a token that moved', async () => {
      const pair = `${name}-pushpair`;
      const token = (n: string) => `fcm-device-${name}-${n}`;
      for (const [wkIdentity, keyToken] of [
        [pair, token('k1')],
        [pair, token('k2')],
        [`${name}-elsewhere`, token('k2')],
      ]) {
        expect((await post(api.url, '/v1/token', { wkIdentity, keyToken })).status).to.equal(200);
      }
      const fcm = await new FakeFcm().start();
      const worker = await startTestWorker({
        ...env,
        PUSH_PROVIDER: 'fcm',
        FCM_SERVICE_ACCOUNT_FILE: fcm.serviceAccountFile(),
        FCM_API_URL: fcm.url,
      });
      try {
        const action = { chain: 'btc', wkIdentity: pair, action: 'tx', payload: '0200abff', path: '0-0' };
        const res = await post(api.url, '/v1/action', action);
        expect(res.status).to.equal(200);
        const id = pushJobId(res.body.data);
        await waitFor(
          'the push to be sent',
          async () => (await topology.admin.zscore(queueKey('relay:', PUSH_QUEUE, 'completed'), id)) !== null,
        );
        expect(fcm.sentTo()).to.deep.equal([token('k1')]);
        // A pair whose key side has no token: the intake takes its intent and queues no job.
        const unannounced = await post(api.url, '/v1/action', { ...action, wkIdentity: `${name}-notokens` });
        expect(unannounced.status).to.equal(200);
        await waitFor(
          'the intent taken',
          async () => (await topology.admin.xlen('relay:push:intents')) === 0,
        );
        const jobKey = queueKey('relay:', PUSH_QUEUE, pushJobId(unannounced.body.data));
        expect(await topology.admin.exists(jobKey)).to.equal(0);
        expect(await topology.admin.lrange(queueKey('relay:', PUSH_QUEUE, 'wait'), 0, -1)).to.deep.equal([]);
      } finally {
        await worker.stop();
        await fcm.stop();
      }
    });

    it('push grace: an ack-capable side’s push waits, and is skipped once that side acked (presence, pod liveness, receipt)', async () => {
      const pair = `${name}-gracepair`;
      const device = `fcm-device-${name}-grace`;
      expect((await post(api.url, '/v1/token', { wkIdentity: pair, keyToken: device })).status).to.equal(200);
      await topology.admin.hset(keys.presence(pair, 'key'), 'j:gracepod', 1, 'a:gracepod', 1);
      await topology.admin.set(keys.pod('gracepod'), '1', 'EX', 45);
      const fcm = await new FakeFcm().start();
      const worker = await startTestWorker({
        ...env,
        PUSH_PROVIDER: 'fcm',
        FCM_SERVICE_ACCOUNT_FILE: fcm.serviceAccountFile(),
        FCM_API_URL: fcm.url,
        PUSH_ACK_GRACE_MS: '3000',
      });
      try {
        const action = { chain: 'btc', wkIdentity: pair, action: 'tx', payload: '0200abff', path: '0-0' };
        const res = await post(api.url, '/v1/action', action);
        expect(res.status).to.equal(200);
        const at = new Date().toISOString();
        await topology.admin.hset(keys.receipts(pair), res.body.data.id, JSON.stringify({ side: 'key', at }));
        const id = pushJobId(res.body.data);
        const jobKey = queueKey('relay:', PUSH_QUEUE, id);
        // Read while the job waits: BullMQ clears the delay when it promotes the job.
        const delay = await waitFor(
          'the push job queued',
          async () => (await topology.admin.hget(jobKey, 'delay')) ?? undefined,
        );
        expect(Number(delay)).to.be.above(0);
        await waitFor(
          'the push job finished',
          async () => (await topology.admin.zscore(queueKey('relay:', PUSH_QUEUE, 'completed'), id)) !== null,
        );
        expect(await topology.admin.hget(jobKey, 'returnvalue')).to.equal('{"skipped":"delivered"}');
        expect(fcm.sends).to.deep.equal([]);
      } finally {
        await worker.stop();
        await fcm.stop();
      }
    });

    it('sockets: an action posted on one pod reaches the pair’s key socket on another pod through the room’s channel', async () => {
      const podB = await startTestApi(env);
      const room = `${name}-socketpair`;
      const before = await joinsHandled();
      const socket = connectClient(podB.url, 'key', { wkIdentity: room });
      try {
        await connected(socket);
        await joinsSettled(before, 1);
        // The joined room's sharded channel, where the notices of its stored actions go, has one subscriber: pod b.
        const channel = keysFor('relay:').roomChannel('key', room);
        expect(await shardSubscribers(topology, channel)).to.equal(1);
        const action = { chain: 'btc', wkIdentity: room, action: 'tx', payload: '0200abff', path: '0-0' };
        const res = await post(api.url, '/v1/action', action);
        expect(res.status).to.equal(200);
        await waitFor('the event', () => socket.received.length > 0);
        expect(socket.received).to.deep.equal([{ event: 'tx', data: res.body.data }]);
      } finally {
        socket.close();
        await podB.stop();
      }
    });

    it('sockets: the rooms’ channels of many pairs and their notices spread over the masters', async () => {
      const podB = await startTestApi(env);
      const rooms = Array.from({ length: 24 }, (_, i) => `${name}-spread-${i}`);
      const before = await joinsHandled();
      const sockets = rooms.map((room) => connectClient(podB.url, 'key', { wkIdentity: room }));
      /** SPUBLISH calls each master has served. */
      const publishes = async () =>
        Promise.all(
          (await topology.masters()).map(async (node) => {
            const stats = await node.info('commandstats');
            return Number(/^cmdstat_spublish:calls=(\d+)/m.exec(stats)?.[1] ?? 0);
          }),
        );
      try {
        await connected(...sockets);
        await joinsSettled(before, rooms.length);
        // Each room's key side went connected: its presence notice (an SPUBLISH) is out before the count starts.
        await waitFor('the presence of every room', async () =>
          (await Promise.all(rooms.map((room) => get(api.url, `/v1/presence/${room}`)))).every(
            (res) => res.body.data.key.connected === true,
          ),
        );
        const channels = rooms.map((room) => keysFor('relay:').roomChannel('key', room));
        const subscribed = await Promise.all(
          (await topology.masters()).map(async (node) => {
            const counts = (await node.call('PUBSUB', 'SHARDNUMSUB', ...channels)) as (string | number)[];
            return counts.filter((_, i) => i % 2 === 1).reduce<number>((sum, n) => sum + Number(n), 0);
          }),
        );
        // Every room's channel once, on the master of its slot.
        expect(subscribed.reduce((sum, n) => sum + n, 0)).to.equal(rooms.length);
        const published = await publishes();
        for (const room of rooms) {
          const res = await post(api.url, '/v1/action', {
            chain: 'btc',
            wkIdentity: room,
            action: 'tx',
            payload: 'ab',
            path: '0-0',
          });
          expect(res.status).to.equal(200);
        }
        await waitFor('every record', () => sockets.every((socket) => socket.received.length === 1));
        const served = (await publishes()).map((calls, i) => calls - published[i]!);
        expect(served.reduce((sum, n) => sum + n, 0)).to.equal(rooms.length);
        // One master on a single Redis or a Sentinel group; on a Cluster each of its masters serves some.
        const masters = (await topology.masters()).length;
        expect(served.filter((n) => n > 0)).to.have.length(masters);
        expect(subscribed.filter((n) => n > 0)).to.have.length(masters);
      } finally {
        for (const socket of sockets) socket.close();
        await podB.stop();
      }
    });

    it('identity-signed requests: one nonce shared by two pods (four copies raced: one record, every 200 carries it), a pin, a signed join and the push throttle’s counter in the pair’s slot', async () => {
      const pinning = { ...env, AUTH_PIN_DAYS: '1' };
      const [podA, podB] = [await startTestApi(pinning), await startTestApi(pinning)];
      const pair = pairOf(Buffer.alloc(32, 0x21), Buffer.alloc(32, 0x22));
      const request = {
        chain: 'btc',
        wkIdentity: pair.wkIdentity,
        action: 'tx',
        payload: '0200abff',
        path: '0-0',
      };
      const socket = connectClient(
        podB.url,
        'key',
        signed({ wkIdentity: pair.wkIdentity }, { purpose: 'join', pair, by: 'key' }),
      );
      try {
        const body = signed(request, { purpose: 'action', pair });
        const replies = await Promise.all(
          [podA, podB, podA, podB].map((pod) => post(pod.url, '/v1/action', body)),
        );
        const stored = JSON.parse((await topology.admin.get(keys.action(pair.wkIdentity)))!);
        const accepted = replies.filter((r) => r.status === 200);
        expect(accepted.length).to.be.greaterThan(0);
        for (const res of accepted) expect(res.body.data).to.deep.equal(stored);
        for (const res of replies.filter((r) => r.status !== 200)) {
          expect([res.status, res.body.error.code]).to.deep.equal([401, 'AUTH_REPLAYED']);
        }
        const nonce = keys.authNonce(pair.wkIdentity, JSON.parse(body.message).nonce);
        expect(await topology.admin.pttl(nonce)).to.be.within(1, 601_000);
        expect(await topology.admin.ttl(keys.authPin(pair.wkIdentity, 'wallet'))).to.be.within(
          86_390,
          86_400,
        );
        const unsigned = await post(podB.url, '/v1/action', request);
        expect([unsigned.status, unsigned.body.error.code]).to.deep.equal([401, 'AUTH_REQUIRED']);
        // The signed join was admitted and pinned the key side.
        await waitFor('the replay to the signed join', () => socket.received.length > 0);
        expect(await topology.admin.exists(keys.authPin(pair.wkIdentity, 'key'))).to.equal(1);
        // The push throttle's counter (a script) runs on the pair's node like its other keys.
        const throttle = new PushThrottle(topology.admin, keys, 1, 900);
        expect(await throttle.check(pair.wkIdentity, 'key', 'job-1')).to.equal(undefined);
        expect(await throttle.check(pair.wkIdentity, 'key', 'job-1')).to.equal(undefined);
        expect(await throttle.check(pair.wkIdentity, 'key', 'job-2')).to.equal('throttled');
      } finally {
        socket.close();
        await podA.stop();
        await podB.stop();
      }
    });

    it('rate limiter: one shared budget kept in Redis', async () => {
      const first = await get(api.url, '/v1/services');
      const second = await get(api.url, '/v1/services');
      const remaining = Number(first.headers.get('ratelimit-remaining'));
      expect(Number(second.headers.get('ratelimit-remaining'))).to.equal(remaining - 1);
      expect(Number(await topology.admin.get('relay:rl:api:127.0.0.1'))).to.equal(100_000 - remaining + 1);
    });

    if (name === 'standalone') {
      it('REDIS_WAIT_REPLICAS=1 without a replica: a write answers 503, never 200', async () => {
        const waiting = await startTestApi({
          ...topology.env,
          REDIS_WAIT_REPLICAS: '1',
          REDIS_WAIT_TIMEOUT_MS: '50',
        });
        try {
          const res = await post(waiting.url, '/v1/sync', syncRecord('unreplicated'));
          expect(res.status).to.equal(503);
          expect(res.body).to.deep.equal(errorBody(res, 'UNAVAILABLE'));
          const token = await post(waiting.url, '/v1/token', { wkIdentity: 'p', keyToken: 't' });
          expect(token.status).to.equal(503);
        } finally {
          await waiting.stop();
        }
      });
    }
  });
}
