import { expect } from 'chai';
import { WebSocket } from 'ws';
import { actionTypeRule, BUILT_IN_ACTION_TYPES as ACTION_TYPES } from '../../src/action-types/table.js';
import type { Side } from '../../src/core/sides.js';
import { loadConfig } from '../../src/config.js';
import { API_PROFILES, ConfigError } from '../../src/core/config/config.js';
import { registry } from '../../src/core/metrics.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { startPrivateRedis, type PrivateRedis } from '../../src/core/redis/server.js';
import { Redis } from 'ioredis';
import { post, get, startTestApi, testEnv, type TestApi } from '../helpers/api.js';
import { redis, testRedis } from '../helpers/redis.js';
import {
  closedAfterEach,
  connected,
  dataOf,
  joinsHandled,
  joinsSettled,
  roomSubscribers,
  type TestClient,
} from '../helpers/sockets.js';
import { startApiPod } from '../helpers/child.js';
import { actionRecord, readData } from '../helpers/profile.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';

const KEY_TYPES = Object.keys(ACTION_TYPES).filter((type) => ACTION_TYPES[type]!.side === 'key');
const WALLET_TYPES = Object.keys(ACTION_TYPES).filter((type) => ACTION_TYPES[type]!.side === 'wallet');

const SYNC = { chain: 'btc', walletIdentity: 'w', keyXpub: 'xpub', wkIdentity: 'wk' };

/** A body every type accepts: a `tx` needs a path, and on a UTXO chain a hex payload. */
const action = (wkIdentity: string, type: string, payload = 'aa') => ({
  chain: 'btc',
  wkIdentity,
  action: type,
  payload,
  path: '0-0',
});

/** Stores an action through `api`: the answer's data is the record, shaped as the API's profile shapes it. */
async function store(api: TestApi, wkIdentity: string, type: string, payload?: string): Promise<unknown> {
  const res = await post(api.url, '/v1/action', action(wkIdentity, type, payload));
  expect(res.status).to.equal(200);
  const { id, createdAt, expiresAt, epoch, offset } = res.body.data;
  const routed = actionTypeRule(type) !== undefined;
  expect(res.body.data).to.deep.equal({
    ...actionRecord(api.config.apiProfile, {
      id,
      ...action(wkIdentity, type, payload),
      createdAt,
      expiresAt,
    }),
    // Records of a routed type carry their place in the pair's stream of that direction.
    ...(routed ? { epoch, offset } : {}),
  });
  if (routed) {
    expect(epoch).to.match(/^[A-Za-z0-9_-]{8,32}$/);
    expect(offset).to.be.a('number').and.to.be.at.least(1);
  }
  return res.body.data;
}

const client = closedAfterEach();

/**
 * A client on a pod in another process (no metrics to watch there): joined once a probe stored through pod a
 * reaches it; the probes are then forgotten.
 */
async function joinedOn(url: string, side: Side, room: string): Promise<TestClient> {
  const made = client(url, side, { wkIdentity: room });
  await connected(made);
  const probe = side === 'key' ? 'tx' : 'txid';
  await waitFor(`the ${side} socket joined`, async () => {
    await store(probeApi!, room, probe);
    const deadline = Date.now() + 500;
    while (made.received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return made.received.length > 0;
  });
  // The last probe may still be on its way: wait until the socket went quiet on a probe of its own.
  const marker = await store(probeApi!, room, probe);
  await waitFor('the last probe', () =>
    made.received.some((r) => (r.data as { id: string }).id === (marker as { id: string }).id),
  );
  made.received.length = 0;
  return made;
}

/** The pod `joinedOn` stores its probes through. */
let probeApi: TestApi | undefined;

/**
 * 20 key sockets, alternately on pods a and b, each join its pair's room while a request for that pair is posted
 * through the other pod: each socket gets it exactly once, whichever of replay and live event comes first. A second
 * request from the same pod follows: a repeat of the first would arrive before it.
 */
async function joinsRacingPosts(a: TestApi, b: TestApi, prefix: string): Promise<void> {
  const rooms = Array.from({ length: 20 }, (_, i) => `${prefix}${i}`);
  const sockets = rooms.map((_, i) => client((i % 2 ? a : b).url, 'key', undefined));
  await connected(...sockets);
  const before = await joinsHandled();
  const posts = rooms.map((room, i) => post((i % 2 ? b : a).url, '/v1/action', action(room, 'tx')));
  sockets.forEach((socket, i) => socket.socket.emit('join', { wkIdentity: rooms[i] }));
  const records = (await Promise.all(posts)).map((res) => {
    expect(res.status).to.equal(200);
    return res.body.data as unknown;
  });
  await joinsSettled(before, rooms.length);
  for (const socket of sockets) await waitFor('the request', () => socket.received.length >= 1);
  const next = await Promise.all(rooms.map((room, i) => store(i % 2 ? b : a, room, 'publicnoncesrequest')));
  for (const [i, socket] of sockets.entries()) {
    await waitFor('the second request', () => socket.received.length >= 2);
    expect(socket.received).to.deep.equal([
      { event: 'tx', data: records[i] },
      { event: 'publicnoncesrequest', data: next[i] },
    ]);
  }
}

/** Connects clients that each join `room`, and waits until every join is handled (a replay is sent, maybe not yet received). */
async function joined(room: string, placements: { api: TestApi; side: Side }[]): Promise<TestClient[]> {
  const before = await joinsHandled();
  const made = placements.map(({ api, side }) => client(api.url, side, { wkIdentity: room }));
  await connected(...made);
  await joinsSettled(before, made.length);
  return made;
}

for (const profile of API_PROFILES) {
  describe(`real-time events (docs/api.md#real-time-events), API_PROFILE=${profile}`, () => {
    let a: TestApi;
    let b: TestApi;
    before(async () => {
      a = await startTestApi({ API_PROFILE: profile });
      b = await startTestApi({ API_PROFILE: profile });
      probeApi = a;
    });
    after(async () => {
      await a.stop();
      await b.stop();
    });

    it('every routed type reaches only its side on both pods, as the stored record; an unknown type is not emitted', async () => {
      const [keyA, keyB, walletA, walletB] = await joined('pair1', [
        { api: a, side: 'key' },
        { api: b, side: 'key' },
        { api: a, side: 'wallet' },
        { api: b, side: 'wallet' },
      ]);
      const [otherPair] = await joined('pair2', [{ api: b, side: 'key' }]);

      for (const via of [a, b]) {
        for (const c of [keyA!, keyB!, walletA!, walletB!]) c.received.length = 0;
        const stored: Record<string, unknown> = {};
        // The unknown type first: events of one publisher reach each client in order, so once the last routed
        // event has arrived, an emitted `note` would have arrived before it.
        expect(await store(via, 'pair1', 'note')).to.include({ action: 'note' });
        for (const type of Object.keys(ACTION_TYPES)) stored[type] = await store(via, 'pair1', type);
        for (const [clients, types] of [
          [[keyA!, keyB!], KEY_TYPES],
          [[walletA!, walletB!], WALLET_TYPES],
        ] as const) {
          for (const c of clients) {
            await waitFor('the last event of the side', () => c.received.length >= types.length);
            expect(c.received).to.deep.equal(types.map((type) => ({ event: type, data: stored[type] })));
          }
        }
      }
      // The data is exactly what GET /v1/action answers.
      const last = WALLET_TYPES.at(-1)!;
      expect(dataOf(walletB!, last)).to.deep.equal([readData(profile, await get(a.url, '/v1/action/pair1'))]);

      // Rooms keep pairs apart: the other pair's socket got nothing until its own request.
      const own = await store(a, 'pair2', 'tx');
      await waitFor('the other pair’s request', () => otherPair!.received.length > 0);
      expect(otherPair!.received).to.deep.equal([{ event: 'tx', data: own }]);
    });

    it('`leave` takes the socket out of the room', async () => {
      const [key] = await joined('pair3', [{ api: b, side: 'key' }]);
      // A socket's events are handled in order: once the probe's join is done, the leave is too.
      const probed = await joinsHandled();
      key!.socket.emit('leave', { wkIdentity: 'pair3' });
      key!.socket.emit('join', { wkIdentity: 'pair3probe' });
      await joinsSettled(probed, 1);
      const [later] = await joined('pair3', [{ api: b, side: 'key' }]);
      const stored = await store(a, 'pair3', 'tx');
      await waitFor('the event', () => later!.received.length > 0);
      expect(later!.received).to.deep.equal([{ event: 'tx', data: stored }]);
      expect(key!.received).to.deep.equal([]);
    });

    it('metrics: sockets per path, events per type and delivery', async () => {
      const value = async (name: string, labels: Record<string, string>) =>
        (await registry.getSingleMetric(name)!.get()).values
          .filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want))
          .reduce((sum, v) => sum + v.value, 0);
      const sockets = () =>
        Promise.all(['key', 'wallet'].map((path) => value('relay_sockets_connected', { path })));
      const [key0, wallet0] = await sockets();
      const live = await value('relay_socket_events_total', { type: 'evmsigned', delivery: 'live' });
      const replayed = await value('relay_socket_events_total', { type: 'tx', delivery: 'replay' });
      await store(a, 'm1', 'evmsigned');
      await store(a, 'm2', 'tx');
      const [, wallet] = await joined('m1', [{ api: b, side: 'wallet' }]).then(async (w) => [
        ...(await joined('m2', [{ api: b, side: 'key' }])),
        ...w,
      ]);
      expect(await sockets()).to.deep.equal([key0! + 1, wallet0! + 1]);
      await store(b, 'm1', 'evmsigned');
      await waitFor('the event', () => wallet!.received.length > 0);
      // Counted where delivered: the first evmsigned found no socket of its room on either pod.
      expect(await value('relay_socket_events_total', { type: 'evmsigned', delivery: 'live' })).to.equal(
        live + 1,
      );
      expect(await value('relay_socket_events_total', { type: 'tx', delivery: 'replay' })).to.equal(
        replayed + 1,
      );
    });

    it('a notice from another pod carries the record: delivered though the mailbox moved on, once per connection; malformed notices are skipped', async () => {
      const [key] = await joined('notice1', [{ api: b, side: 'key' }]);
      // Another pod's notices on the room's channel: a record the mailbox never held (replaced at once, as far as
      // this pod can tell), the same record again among garbage; then a real one from pod a.
      const record = actionRecord(profile, {
        id: 'third-pod-record-id-0001',
        ...action('notice1', 'tx'),
        createdAt: new Date().toISOString(),
        expiresAt: new Date(Date.now() + 60_000).toISOString(),
      });
      const channel = keysFor('relay:').roomChannel('key', 'notice1');
      const notice = (room: string, json: string) => `${'0f'.repeat(8)} ${room}\n${json}`;
      const json = JSON.stringify(record);
      await redis().spublish(channel, notice('notice1', json));
      for (const garbage of [
        'no header',
        `${'0f'.repeat(8)} notice1`,
        notice('notice1', '{not json'),
        notice('notice1', '"a string"'),
        notice('notice1', JSON.stringify({ ...record, wkIdentity: 'other1' })),
        notice('other1', json),
        notice('notice1', json),
      ]) {
        await redis().spublish(channel, garbage);
      }
      await waitFor('the third pod’s record', () => key!.received.length === 1);
      const stored = await store(a, 'notice1', 'publicnoncesrequest');
      await waitFor('the stored record', () => key!.received.length === 2);
      expect(key!.received).to.deep.equal([
        { event: 'tx', data: record },
        { event: 'publicnoncesrequest', data: stored },
      ]);
    });

    it('a burst of 20 mixed requests reaches the sockets on another pod (its own process): all of them, once each, in POST order', async function () {
      this.timeout(60_000);
      const c = await startApiPod({ API_PROFILE: profile });
      try {
        const keyC = await joinedOn(c.url, 'key', 'burst1');
        const walletC = await joinedOn(c.url, 'wallet', 'burst1');
        // Joined after the probes: the mailbox holds a wallet probe, which is not replayed.
        const [keyA, walletA] = await joined('burst1', [
          { api: a, side: 'key' },
          { api: a, side: 'wallet' },
        ]);
        const types = [...Object.keys(ACTION_TYPES), 'note'];
        // Sent at once: each later request replaces the earlier ones in the mailbox before pod c could look.
        const posted = await Promise.all(
          Array.from({ length: 20 }, (_, i) => {
            const type = types[i % types.length]!;
            return store(a, 'burst1', type).then((data) => ({ event: type, data }));
          }),
        );
        const ofSide = (side: Side) => posted.filter((p) => ACTION_TYPES[p.event]?.side === side);
        for (const [side, here, there] of [
          ['key', keyA!, keyC],
          ['wallet', walletA!, walletC],
        ] as const) {
          const expected = ofSide(side);
          await waitFor(`every ${side} event on pod a`, () => here.received.length >= expected.length);
          // A marker from the same pod: anything repeated or late on pod c would have come before it.
          const type = side === 'key' ? 'tx' : 'txid';
          const last = { event: type, data: await store(a, 'burst1', type) };
          for (const socket of [here, there]) {
            await waitFor('the marker', () => socket.received.length >= expected.length + 1);
          }
          // Pod a emits in the order it stored; pod c delivers exactly that sequence, each record once.
          expect(there.received).to.deep.equal(here.received);
          expect(here.received.at(-1)).to.deep.equal(last);
          const events = here.received.slice(0, -1);
          expect(events).to.have.deep.members(expected);
          const times = events.map((e) => Date.parse((e.data as { createdAt: string }).createdAt));
          expect(times).to.deep.equal([...times].sort((x, y) => x - y));
        }
      } finally {
        await c.stop();
      }
    });

    it('20 joins racing 20 POSTs over two pods: each socket gets its pair’s request exactly once', () =>
      joinsRacingPosts(a, b, 'race'));

    it('`join` then `leave` sent back to back leave the socket out of the room', async () => {
      const sockets = [client(b.url, 'key', undefined), client(a.url, 'wallet', undefined)];
      await connected(...sockets);
      const before = await joinsHandled();
      for (const socket of sockets) {
        socket.socket.emit('join', { wkIdentity: 'jl1' });
        socket.socket.emit('leave', { wkIdentity: 'jl1' });
        socket.socket.emit('join', { wkIdentity: 'jl1probe' });
      }
      await joinsSettled(before, 4);
      await store(a, 'jl1', 'tx');
      await store(a, 'jl1', 'txid');
      const probes = [await store(a, 'jl1probe', 'tx'), await store(a, 'jl1probe', 'txid')];
      for (const [i, socket] of sockets.entries()) {
        await waitFor('the probe', () => socket.received.length >= 1);
        expect(socket.received).to.deep.equal([{ event: i === 0 ? 'tx' : 'txid', data: probes[i] }]);
      }
    });

    it('the apps’ recovery and chain-sync types reach the right side', async () => {
      const [key, wallet] = await joined('apps1', [
        { api: b, side: 'key' },
        { api: b, side: 'wallet' },
      ]);
      const stored: Record<string, unknown> = {};
      for (const type of [
        'recoveryrequest',
        'recoveryresponse',
        'recoverydenied',
        'chainsyncrequest',
        'chainsyncrejected',
      ])
        stored[type] = await store(a, 'apps1', type);
      await waitFor('the key events', () => key!.received.length >= 2);
      await waitFor('the wallet events', () => wallet!.received.length >= 3);
      expect(key!.received).to.deep.equal(
        ['recoveryrequest', 'chainsyncrequest'].map((event) => ({ event, data: stored[event] })),
      );
      expect(wallet!.received).to.deep.equal(
        ['recoveryresponse', 'recoverydenied', 'chainsyncrejected'].map((event) => ({
          event,
          data: stored[event],
        })),
      );
    });

    describe('replay on a key join', () => {
      it('to the joining socket only, once per connection (second join, live event then join)', async () => {
        const [live] = await joined('r1', [{ api: a, side: 'key' }]);
        const request = await store(b, 'r1', 'tx');
        await waitFor('the live event', () => live!.received.length === 1);

        const [late] = await joined('r1', [{ api: b, side: 'key' }]);
        await waitFor('the replay', () => late!.received.length === 1);
        expect(late!.received).to.deep.equal([{ event: 'tx', data: request }]);

        // Both join again (as after a foreground): neither gets the request a second time.
        const before = await joinsHandled();
        live!.socket.emit('join', { wkIdentity: 'r1' });
        late!.socket.emit('join', { wkIdentity: 'r1' });
        await joinsSettled(before, 2);

        const next = await store(a, 'r1', 'publicnoncesrequest');
        for (const c of [live!, late!]) {
          await waitFor('the next request', () => c.received.length === 2);
          expect(c.received).to.deep.equal([
            { event: 'tx', data: request },
            { event: 'publicnoncesrequest', data: next },
          ]);
        }
      });

      it('a reconnected socket (a new connection) gets the pending request again', async () => {
        const request = await store(a, 'r2', 'wksigningrequest');
        const [key] = await joined('r2', [{ api: a, side: 'key' }]);
        await waitFor('the replay', () => key!.received.length === 1);
        expect(key!.received).to.deep.equal([{ event: 'wksigningrequest', data: request }]);
        const before = await joinsHandled();
        key!.socket.disconnect().connect(); // the app sends join on every connect
        await joinsSettled(before, 1);
        await waitFor('the replay on the new connection', () => key!.received.length === 2);
        expect(key!.received).to.deep.equal([
          { event: 'wksigningrequest', data: request },
          { event: 'wksigningrequest', data: request },
        ]);
      });

      it('skips an expired record, a wallet-bound record, and the wallet path replays nothing', async () => {
        const expired = {
          ...action('r3', 'tx'),
          createdAt: new Date(Date.now() - 60_000).toISOString(),
          expiresAt: new Date(Date.now() - 1000).toISOString(),
        };
        await redis().set('relay:action:r3', JSON.stringify(expired), 'EX', 60);
        await store(a, 'r4', 'txid');
        await store(a, 'r5', 'tx');
        const [expiredKey, walletBound, wallet] = await joined('r3', [{ api: a, side: 'key' }]).then(
          async (first) => [
            ...first,
            ...(await joined('r4', [{ api: a, side: 'key' }])),
            ...(await joined('r5', [{ api: b, side: 'wallet' }])),
          ],
        );
        expect([expiredKey!.received, walletBound!.received, wallet!.received]).to.deep.equal([[], [], []]);
      });
    });

    describe('bad input', () => {
      for (const [name, data] of [
        ['no data', undefined],
        ['a string', 'pair1'],
        ['a missing wkIdentity', {}],
        ['a bad identifier', { wkIdentity: 'not/valid' }],
        ['an overlong identifier', { wkIdentity: 'x'.repeat(201) }],
        ['a non-string identifier', { wkIdentity: { $gt: '' } }],
      ] as const) {
        it(`a join with ${name} disconnects the socket (io server disconnect)`, async () => {
          const before = await joinsHandled('invalid');
          const bad = client(a.url, 'key', data ?? null);
          await waitFor('the disconnect', () => bad.disconnects.length > 0);
          expect(bad.disconnects).to.deep.equal(['io server disconnect']);
          expect(bad.socket.connected).to.equal(false);
          expect(await joinsHandled('invalid')).to.equal(before + 1);
        });
      }

      it('events other than join/leave and a bad leave are ignored; the socket stays joined', async () => {
        const [key] = await joined('b1', [{ api: a, side: 'key' }]);
        key!.socket.emit('tx', action('b1', 'tx'));
        key!.socket.emit('leave', { wkIdentity: 'bad/one' });
        key!.socket.emit('leave');
        key!.socket.emit('constructor', {});
        key!.socket.emit('__proto__', { wkIdentity: 'b1' });
        const stored = await store(a, 'b1', 'tx');
        await waitFor('the event', () => key!.received.length > 0);
        expect(key!.received).to.deep.equal([{ event: 'tx', data: stored }]);
        expect(key!.disconnects).to.deep.equal([]);
      });

      it('garbage frames and oversize packets close only their own connection; the pod keeps serving', async () => {
        const [key] = await joined('b2', [{ api: a, side: 'key' }]);
        const wsUrl = `${a.url.replace('http', 'ws')}/v1/socket/key/?EIO=4&transport=websocket`;
        const frames: (string | Buffer)[] = [
          'garbage',
          '4',
          '42not json',
          '42["join"',
          '42[]',
          '42[{"a":1}]',
          '42["join",{"wkIdentity":"b2"},"extra",{}]',
          '41',
          '9',
          Buffer.from([0xff, 0x00, 0x13]),
          '',
        ];
        for (const frame of frames) {
          const raw = new WebSocket(wsUrl);
          await new Promise((resolve) => raw.once('open', resolve));
          raw.send('40'); // socket.io CONNECT to the default namespace, then the frame
          raw.send(frame);
          raw.close();
        }
        const oversize = new WebSocket(wsUrl);
        const code = await new Promise<number>((resolve) => {
          oversize.once('open', () => oversize.send(`42["join",{"wkIdentity":"${'x'.repeat(200 * 1024)}"}]`));
          oversize.once('close', (closeCode) => resolve(closeCode));
        });
        expect(code).to.equal(1009); // message too big

        const handshake = await fetch(`${a.url}/v1/socket/key/?EIO=4&transport=polling`);
        const sid = JSON.parse((await handshake.text()).slice(1)).sid as string;
        const big = await fetch(`${a.url}/v1/socket/key/?EIO=4&transport=polling&sid=${sid}`, {
          method: 'POST',
          body: '4' + 'x'.repeat(200 * 1024),
        });
        expect(big.status).to.equal(413);

        const stored = await store(a, 'b2', 'tx');
        await waitFor('the event', () => key!.received.length > 0);
        expect(key!.received).to.deep.equal([{ event: 'tx', data: stored }]);
        expect((await get(a.url, '/readyz')).status).to.equal(200);
      });
    });

    it('a subscription cut and restored while a request is pending: the pod replays it to its key sockets, once', async () => {
      const proxy = await TcpProxy.start(testRedis().port);
      const c = await startTestApi({ REDIS_URL: proxy.url, API_PROFILE: profile });
      try {
        const [missed, had] = await joined('gap1', [{ api: c, side: 'key' }]).then(async (first) => [
          ...first,
          ...(await joined('gap2', [{ api: c, side: 'key' }])),
        ]);
        const delivered = await store(a, 'gap2', 'tx');
        await waitFor('the live event', () => had!.received.length === 1);
        const subscribed = async () =>
          (await roomSubscribers('key', 'gap1')) + (await roomSubscribers('key', 'gap2'));
        await waitFor('pod c subscribed to both rooms', async () => (await subscribed()) === 2);

        await proxy.cut();
        await waitFor('pod c unsubscribed', async () => (await subscribed()) === 0);
        // Acknowledged while pod c hears nothing: its notice never reaches pod c.
        const pending = await store(a, 'gap1', 'wksigningrequest');
        await proxy.restore();

        await waitFor('the replay after the gap', () => missed!.received.length === 1, 15_000);
        const next = [await store(a, 'gap1', 'tx'), await store(a, 'gap2', 'tx')];
        await waitFor('the next events', () => missed!.received.length === 2 && had!.received.length === 2);
        expect(missed!.received).to.deep.equal([
          { event: 'wksigningrequest', data: pending },
          { event: 'tx', data: next[0] },
        ]);
        // The record it already had was not sent again by the replay.
        expect(had!.received).to.deep.equal([
          { event: 'tx', data: delivered },
          { event: 'tx', data: next[1] },
        ]);
        expect(missed!.disconnects).to.deep.equal([]);
      } finally {
        await c.stop();
        await proxy.stop();
      }
    });

    it('a request acknowledged while the storing pod’s publisher reconnects reaches the other pod once it is back', async () => {
      const [key] = await joined('pub1', [{ api: b, side: 'key' }]);
      // After a failover the store's connection can be back before the publisher's: the write is acknowledged while
      // the notice to the other pods cannot go out yet. Here the publishers are cut again and again (each one comes
      // back 100 ms after a cut), so the POST's notice finds its publisher reconnecting.
      const publishers = async () =>
        ((await redis().call('CLIENT', 'LIST', 'TYPE', 'normal')) as string)
          .split('\n')
          .filter((line) => line.includes(' name=relay-socket-pub '))
          .map((line) => /\bid=(\d+)/.exec(line)![1]!);
      let cutting = true;
      let cuts = 0;
      const cutter = (async () => {
        while (cutting) {
          for (const id of await publishers()) cuts += Number(await redis().call('CLIENT', 'KILL', 'ID', id));
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      })();
      let record: unknown;
      try {
        await waitFor('a publisher cut', () => cuts > 0);
        record = await store(a, 'pub1', 'wksigningrequest');
      } finally {
        cutting = false;
        await cutter;
      }
      await waitFor('the request on the other pod', () => key!.received.length > 0);
      expect(key!.received).to.deep.equal([{ event: 'wksigningrequest', data: record }]);
      expect(key!.disconnects).to.deep.equal([]);
    });

    it('events flow again after Redis restarts; the REST path answers 503 quickly meanwhile', async () => {
      const [key] = await joined('redis1', [{ api: b, side: 'key' }]);
      await testRedis().stop();
      try {
        const started = Date.now();
        expect((await post(a.url, '/v1/action', action('redis1', 'tx'))).status).to.equal(503);
        expect(Date.now() - started).to.be.below(2000);
      } finally {
        await testRedis().start();
      }
      // The subscriber resubscribes by itself: the room's channel is back on pod b without a new join.
      await waitFor('pod b subscribed again', async () => (await roomSubscribers('key', 'redis1')) === 1);
      await waitFor(
        'a stored action',
        async () => (await post(a.url, '/v1/action', action('redis1', 'tx'))).status === 200,
      );
      await waitFor('the event after the restart', () => key!.received.length > 0);
      expect(key!.received.map((r) => r.event)).to.deep.equal(['tx']);
      expect(key!.disconnects).to.deep.equal([]);
    });
  });

  describe(`socket.io servers, API_PROFILE=${profile}`, () => {
    it('Engine.IO 4 on both paths: polling handshake offering the WebSocket upgrade, the documented limits, CORS_ORIGINS', async () => {
      const api = await startTestApi({ CORS_ORIGINS: 'https://wallet.example', API_PROFILE: profile });
      try {
        for (const side of ['key', 'wallet']) {
          const path = `${api.url}/v1/socket/${side}/?EIO=4&transport=polling`;
          const allowed = await fetch(path, { headers: { Origin: 'https://wallet.example' } });
          expect(allowed.status).to.equal(200);
          expect(allowed.headers.get('access-control-allow-origin')).to.equal('https://wallet.example');
          const open = JSON.parse((await allowed.text()).slice(1)) as Record<string, unknown>;
          expect(open).to.deep.equal({
            sid: open.sid,
            upgrades: ['websocket'],
            pingInterval: 25000,
            pingTimeout: 20000,
            maxPayload: 100 * 1024,
          });
          const other = await fetch(path, { headers: { Origin: 'https://evil.example' } });
          expect(other.headers.get('access-control-allow-origin')).to.equal(null);
        }
        // Engine.IO 3 clients are refused.
        expect((await fetch(`${api.url}/v1/socket/key/?EIO=3&transport=polling`)).status).to.equal(400);
      } finally {
        await api.stop();
      }
    });
  });

  describe(`socket limits, API_PROFILE=${profile}`, () => {
    it('joins share one per-IP budget across pods through Redis; over it the socket is disconnected', async () => {
      const a = await startTestApi({
        RATE_LIMIT_POINTS: '2',
        RATE_LIMIT_WINDOW_SECONDS: '60',
        API_PROFILE: profile,
      });
      const b = await startTestApi({
        RATE_LIMIT_POINTS: '2',
        RATE_LIMIT_WINDOW_SECONDS: '60',
        API_PROFILE: profile,
      });
      try {
        const before = await joinsHandled();
        const first = client(a.url, 'key', { wkIdentity: 'l1' });
        const second = client(b.url, 'wallet', { wkIdentity: 'l1' });
        await joinsSettled(before, 2);
        expect(await redis().exists('relay:rl:joins:127.0.0.1')).to.equal(1);
        const limited = await joinsHandled('rate_limited');
        const third = client(b.url, 'key', { wkIdentity: 'l1' });
        await waitFor('the disconnect', () => third.disconnects.length > 0);
        expect(third.disconnects).to.deep.equal(['io server disconnect']);
        expect(await joinsHandled('rate_limited')).to.equal(limited + 1);
        expect([first.socket.connected, second.socket.connected]).to.deep.equal([true, true]);
      } finally {
        await a.stop();
        await b.stop();
      }
    });

    it('SOCKETS_PER_IP caps open sockets per client IP, the IP taken as HTTP takes it (TRUST_PROXY_HOPS)', async () => {
      const api = await startTestApi({ SOCKETS_PER_IP: '2', TRUST_PROXY_HOPS: '1', API_PROFILE: profile });
      const from = (ip: string) =>
        client(
          api.url,
          'key',
          { wkIdentity: 'cap' },
          { extraHeaders: { 'X-Forwarded-For': `9.9.9.9, ${ip}` } },
        );
      try {
        const [one, two] = [from('10.0.0.1'), from('10.0.0.1')];
        await connected(one, two);
        const refused = from('10.0.0.1');
        await waitFor('the refusal', () => refused.connectErrors.length > 0);
        const other = from('10.0.0.2');
        await connected(other);
        expect(refused.socket.connected).to.equal(false);
        // A socket that closes frees its place.
        one.close();
        await connected(refused);
      } finally {
        await api.stop();
      }
    });
  });

  describe(`SIGTERM with sockets connected, API_PROFILE=${profile}`, () => {
    it('readiness turns 503, every socket is closed so clients reconnect elsewhere, the drain ends in time', async () => {
      const api = await startTestApi({ SHUTDOWN_TIMEOUT_MS: '3000', API_PROFILE: profile });
      const before = await joinsHandled();
      const sockets = [
        client(api.url, 'key', { wkIdentity: 's1' }),
        client(api.url, 'wallet', { wkIdentity: 's1' }),
        client(api.url, 'key', { wkIdentity: 's2' }, { transports: ['polling'] }),
      ];
      await connected(...sockets);
      await joinsSettled(before, 3);
      const started = Date.now();
      await api.stop();
      expect(Date.now() - started).to.be.below(3000);
      for (const s of sockets) {
        await waitFor('the disconnect', () => s.disconnects.length > 0);
        // Not "io server disconnect": that one the client never retries on its own.
        expect(s.disconnects).to.deep.equal(['transport close']);
      }
      const messages = api.logs.map((line) => line.msg);
      expect(messages.indexOf('api draining')).to.be.below(messages.indexOf('sockets closed'));
      expect(api.logs.find((line) => line.msg === 'sockets closed')).to.include({
        sockets: 3,
        allClosed: true,
      });
    });
  });

  describe(`replay inside a write’s WAIT (REDIS_WAIT_REPLICAS=1), API_PROFILE=${profile}`, function () {
    this.timeout(30_000);
    let master: PrivateRedis;
    let replica: PrivateRedis;
    let a: TestApi;
    let b: TestApi;
    before(async () => {
      master = await startPrivateRedis();
      replica = await startPrivateRedis({ args: ['--replicaof', '127.0.0.1', String(master.port)] });
      const env = {
        REDIS_URL: master.url,
        REDIS_WAIT_REPLICAS: '1',
        REDIS_WAIT_TIMEOUT_MS: '1000',
        API_PROFILE: profile,
      };
      await waitFor('the replica', async () => {
        const probe = await startTestApi(env).catch(() => undefined);
        if (!probe) return false;
        const ok = (await post(probe.url, '/v1/sync', SYNC)).status === 200;
        await probe.stop();
        return ok;
      });
      a = await startTestApi(env);
      b = await startTestApi(env);
    });
    after(async () => {
      await a?.stop();
      await b?.stop();
      await replica?.stop();
      await master?.stop();
    });

    it('20 joins racing 20 POSTs over two pods while writes wait for the replica: each socket gets its request once', () =>
      joinsRacingPosts(a, b, 'wrace'));

    it('a join whose replay reads the record before the live event: every socket gets it once', async () => {
      // Pod a's socket joins first: commands behind the WAIT on pod a's connection (its join's, its replay's) would
      // wait for the replica too. Pod b's joins while the record is stored but not yet confirmed.
      const before = await joinsHandled();
      const sockets = [client(a.url, 'key', { wkIdentity: 'wait1' }), client(b.url, 'key', undefined)];
      await connected(...sockets);
      await joinsSettled(before, 1);
      replica.signal('SIGSTOP');
      let answer: Promise<{ status: number; body: { data: unknown } }>;
      try {
        // Stored on the master, not yet confirmed: the POST waits in WAIT, its event not yet emitted.
        answer = post(a.url, '/v1/action', action('wait1', 'tx'));
        const probe = new Redis(master.port, '127.0.0.1');
        await waitFor('the stored record', async () => (await probe.exists('relay:action:wait1')) === 1);
        probe.disconnect();
        sockets[1]!.socket.emit('join', { wkIdentity: 'wait1' });
        await waitFor('the replay on pod b', () => sockets[1]!.received.length === 1);
      } finally {
        replica.signal('SIGCONT');
      }
      const res = await answer;
      expect(res.status).to.equal(200);
      // The replica may still be catching up: a 503 stores nothing that is emitted, so post until acknowledged.
      const next = await waitFor('the next request acknowledged', async () => {
        const reply = await post(a.url, '/v1/action', action('wait1', 'wksigningrequest'));
        return reply.status === 200 ? reply : undefined;
      });
      for (const socket of sockets) {
        await waitFor('the next request', () => socket.received.length >= 2);
        expect(socket.received).to.deep.equal([
          { event: 'tx', data: res.body.data },
          { event: 'wksigningrequest', data: next.body.data },
        ]);
      }
    });
  });

  describe(`ACTION_TYPES_EXTRA, API_PROFILE=${profile}`, () => {
    for (const [value, message] of [
      ['[{"type":', 'ACTION_TYPES_EXTRA must be a JSON array (it is not valid JSON)'],
      [
        '{"type":"x"}',
        'ACTION_TYPES_EXTRA must be an array of { type, to: "key"|"wallet", replay, push: { title, body } | null }: / must be array',
      ],
      [
        '[{"type":"x","to":"both","replay":false,"push":null}]',
        '/0/to must be equal to one of the allowed values',
      ],
      ['[{"type":"x","to":"key","replay":false}]', '/0/push'],
      ['[{"type":"x/y","to":"key","replay":false,"push":null}]', '/0/type'],
      ['[{"type":"x","to":"wallet","replay":true,"push":null}]', '/0/replay must be equal to constant'],
      [
        '[{"type":"x","to":"key","repaly":true,"replay":true,"push":null}]',
        '/0 must be equal to one of the allowed values',
      ],
      ['[{"type":"x","to":"key","replay":true,"push":{"title":"T"}}]', '/0/push'],
      [
        '[{"type":"tx","to":"wallet","replay":false,"push":null}]',
        'ACTION_TYPES_EXTRA may not change the built-in type "tx"',
      ],
      ...['ack', 'delivered', 'presence', 'join', 'leave'].map((type) => [
        JSON.stringify([
          { type: 'vaultrequest', to: 'key', replay: true, push: null },
          { type, to: 'wallet', replay: false, push: null },
        ]),
        `ACTION_TYPES_EXTRA may not name a type "${type}": ack, delivered, presence, join, leave are the sockets' own events`,
      ]),
    ]) {
      it(`refuses ${value} at start-up with one line naming the variable`, () => {
        expect(() => loadConfig(testEnv({ ACTION_TYPES_EXTRA: value!, API_PROFILE: profile }))).to.throw(
          ConfigError,
          message!,
        );
      });
    }

    it('adds rows without a release: routed to their side, replayed, pushed only when they have a text', async () => {
      const api = await startTestApi({
        API_PROFILE: profile,
        ACTION_TYPES_EXTRA: JSON.stringify([
          { type: 'vaultrequest', to: 'key', replay: true, push: null },
          {
            type: 'vaultsigned',
            to: 'wallet',
            replay: false,
            push: { title: 'Vault', body: 'Open your wallet' },
          },
        ]),
      });
      try {
        expect(actionTypeRule('vaultsigned')).to.deep.equal({
          side: 'wallet',
          replay: false,
          push: { title: 'Vault', body: 'Open your wallet' },
        });
        // Both sides have tokens: only the type's push text decides whether a job is queued.
        const tokens = { wkIdentity: 'extra1', keyToken: 'fcm-extra1-key', walletToken: 'fcm-extra1-wallet' };
        expect((await post(api.url, '/v1/token', tokens)).status).to.equal(200);
        const request = await store(api, 'extra1', 'vaultrequest');
        const [key, wallet] = await joined('extra1', [
          { api, side: 'key' },
          { api, side: 'wallet' },
        ]);
        await waitFor('the replay', () => key!.received.length === 1);
        const reply = await store(api, 'extra1', 'vaultsigned');
        await waitFor('the reply', () => wallet!.received.length === 1);
        expect(key!.received).to.deep.equal([{ event: 'vaultrequest', data: request }]);
        expect(wallet!.received).to.deep.equal([{ event: 'vaultsigned', data: reply }]);
        // A push of null: no push intent; a text: one.
        const intents = await redis().xrange('relay:push:intents', '-', '+');
        expect(intents.map(([, fields]) => fields.slice(0, 2))).to.deep.equal([
          ['id', (reply as { id: string }).id],
        ]);
      } finally {
        await api.stop();
      }
    });
  });
}
