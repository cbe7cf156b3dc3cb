import { expect } from 'chai';
import type { RedisClient } from '../../src/core/redis/clients.js';
import type { Side } from '../../src/core/sides.js';
import { registry } from '../../src/core/metrics.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { createLogger } from '../../src/core/log.js';
import { ackCapable } from '../../src/realtime/index.js';
import { Presence } from '../../src/realtime/presence.js';
import { errorBody, get, startTestApi, type TestApi } from '../helpers/api.js';
import { startApiPod } from '../helpers/child.js';
import { commandsDuring, redis, testRedis } from '../helpers/redis.js';
import { bearer, pairToken, SESSION_ENV } from '../helpers/sessions.js';
import { PAIR, signed } from '../helpers/signing.js';
import { closedAfterEach, dataOf, joinAnswered } from '../helpers/sockets.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { TOPOLOGIES, twoPodsOn, type TestTopology } from '../helpers/topologies.js';
import { waitFor } from '../helpers/wait.js';

const keys = keysFor('relay:');
const client = closedAfterEach();
const ALONE = { connected: false, lastSeen: null };
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

type SidePresence = { connected: boolean; lastSeen: string | null };

interface Answer {
  ok: boolean;
  peer: SidePresence;
}

/** A socket on `side` whose join (with an acknowledgement) was answered: the answer. */
const joined = (api: { url: string }, side: Side, join: unknown) =>
  joinAnswered<Answer>(client, api.url, side, join);

const streamJoin = (wkIdentity: string) => ({ wkIdentity, since: { offset: 0 } });

async function presenceOf(api: { url: string }, room: string) {
  const res = await get(api.url, `/v1/presence/${room}`);
  expect(res.status).to.equal(200);
  return res.body.data as Record<Side, SidePresence>;
}

/** The presence hash of a side as Redis holds it. */
const hashOf = (admin: RedisClient, room: string, side: Side) => admin.hgetall(keys.presence(room, side));

async function changes(side: Side, connected: boolean): Promise<number> {
  const values = (await registry.getSingleMetric('relay_presence_changes_total')!.get()).values;
  return values.find((v) => v.labels.side === side && v.labels.connected === String(connected))?.value ?? 0;
}

/** The core case on every topology: two pods, a side's sockets on both, the other side told of each transition once. */
for (const name of TOPOLOGIES) {
  describe(`presence across two pods on a ${name} Redis (docs/api.md#presence)`, function () {
    this.timeout(60_000);
    let topology: TestTopology;
    let a: TestApi;
    let b: TestApi;
    twoPodsOn(name, (pods) => ({ topology, a, b } = pods));

    it('connected and lastSeen on every pod; the presence event once per transition, to stream sockets only', async () => {
      const room = `${name}-presence`;
      expect(await presenceOf(a, room)).to.deep.equal({ key: ALONE, wallet: ALONE });
      const watcher = await joined(a, 'wallet', streamJoin(room));
      expect(watcher.answer).to.deep.equal({
        ok: true,
        recovered: true,
        epoch: null,
        offset: 0,
        replayed: 0,
        peer: ALONE,
      });
      const plain = await joined(b, 'wallet', { wkIdentity: room });
      const before = await changes('key', true);

      const first = await joined(b, 'key', { wkIdentity: room });
      expect(first.answer).to.deep.include({ ok: true, epoch: null, offset: 0 });
      expect(first.answer.peer).to.deep.include({ connected: true });
      expect(first.answer.peer.lastSeen).to.match(ISO);
      await waitFor('the presence event', () => dataOf(watcher.socket, 'presence').length === 1);
      const [event] = dataOf(watcher.socket, 'presence') as { lastSeen: string }[];
      expect(event).to.deep.equal({
        wkIdentity: room,
        side: 'key',
        connected: true,
        lastSeen: event!.lastSeen,
      });
      expect(event!.lastSeen).to.match(ISO);
      expect((await presenceOf(a, room)).key.connected).to.equal(true);
      expect((await presenceOf(b, room)).wallet.connected).to.equal(true);
      expect(await changes('key', true)).to.equal(before + 1);

      // A second socket of the side, on the other pod: no transition.
      const second = await joined(a, 'key', { wkIdentity: room });
      const held = await hashOf(topology.admin, room, 'key');
      expect(Object.keys(held).sort()).to.have.length(2);
      expect(
        Object.entries(held).every(([field, value]) => /^j:[0-9a-f]{16}$/.test(field) && value === '1'),
      ).to.equal(true);
      for (const field of Object.keys(held)) {
        expect(await topology.admin.exists(keys.pod(field.slice(2)))).to.equal(1);
        expect(await topology.admin.ttl(keys.pod(field.slice(2)))).to.be.within(1, 45);
      }
      expect(await topology.admin.ttl(keys.presence(room, 'key'))).to.be.within(1, 86_400);

      first.socket.close();
      await waitFor(
        'one socket counted',
        async () => Object.keys(await hashOf(topology.admin, room, 'key')).length === 2,
      );
      expect((await presenceOf(b, room)).key.connected).to.equal(true);
      second.socket.close();
      await waitFor('the second presence event', () => dataOf(watcher.socket, 'presence').length === 2);
      const gone = dataOf(watcher.socket, 'presence')[1] as { lastSeen: string };
      expect(gone).to.deep.equal({
        wkIdentity: room,
        side: 'key',
        connected: false,
        lastSeen: gone.lastSeen,
      });
      // What Redis holds once the side left: when, and no count.
      expect(await hashOf(topology.admin, room, 'key')).to.deep.equal({
        lastSeen: String(Date.parse(gone.lastSeen)),
      });
      const after = await presenceOf(a, room);
      expect(after).to.deep.equal({
        key: { connected: false, lastSeen: gone.lastSeen },
        wallet: { connected: true, lastSeen: after.wallet.lastSeen },
      });
      expect(dataOf(plain.socket, 'presence')).to.deep.equal([]);
      expect(dataOf(watcher.socket, 'presence')).to.have.length(2);
    });
  });
}

describe('presence (standalone)', function () {
  this.timeout(60_000);
  let a: TestApi;
  let b: TestApi;
  let apps: TestApi;
  before(async () => {
    [a, b, apps] = await Promise.all([
      startTestApi({ PRESENCE_TTL_SECONDS: '15' }),
      startTestApi(SESSION_ENV),
      startTestApi({ API_PROFILE: 'ssp-apps' }),
    ]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop(), apps?.stop()]);
  });

  it('GET /v1/presence: a path parameter outside the identifier format is 400 in the envelope', async () => {
    for (const api of [a, apps]) {
      const res = await get(api.url, '/v1/presence/not%20an%20id');
      expect(res.status).to.equal(400);
      expect(res.body).to.deep.equal(errorBody(res, 'INVALID_PARAMETER', res.body.error.message));
      expect(res.body.error.details).to.deep.include({
        field: '/params/id',
        message: res.body.error.details[0].message,
      });
    }
  });

  it('GET /v1/presence under ssp-apps: the object itself', async () => {
    const { socket } = await joined(apps, 'key', { wkIdentity: 'pr-apps' });
    const res = await get(apps.url, '/v1/presence/pr-apps');
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({
      key: { connected: true, lastSeen: res.body.key.lastSeen },
      wallet: ALONE,
    });
    socket.close();
  });

  it('the join answer of each kind carries the peer', async () => {
    const room = 'pr-peer';
    const key = await joined(a, 'key', { wkIdentity: room });
    expect(key.answer).to.deep.equal({ ok: true, epoch: null, offset: 0, peer: ALONE });
    const wallet = await joined(b, 'wallet', streamJoin(room));
    expect(wallet.answer).to.deep.include({ ok: true, recovered: true, replayed: 0 });
    expect(wallet.answer.peer).to.deep.equal({ connected: true, lastSeen: wallet.answer.peer.lastSeen });
    key.socket.close();
    await waitFor('the key side gone', async () => !(await presenceOf(b, room)).key.connected);
    const again = await joined(a, 'wallet', { wkIdentity: room });
    const { lastSeen } = (await presenceOf(b, room)).key;
    expect(lastSeen).to.match(ISO);
    expect(again.answer.peer).to.deep.equal({ connected: false, lastSeen });
  });

  it('ackCapable: only a stream socket whose join was verified (a signature or a session token)', async () => {
    const room = PAIR.wkIdentity;
    const capable = () => ackCapable(redis(), keys, room, 'key');
    expect(await capable()).to.equal(false);
    const plain = await joined(a, 'key', { wkIdentity: room });
    const unsigned = await joined(b, 'key', streamJoin(room));
    expect(await capable()).to.equal(false);
    const verified = await joined(b, 'key', signed(streamJoin(room), { purpose: 'join', by: 'key' }));
    expect(verified.answer).to.deep.include({ ok: true, recovered: true });
    expect(await capable()).to.equal(true);
    expect(await ackCapable(redis(), keys, room, 'wallet')).to.equal(false);
    const held = await redis().hgetall(keys.presence(room, 'key'));
    expect(Object.entries(held).filter(([field]) => field.startsWith('a:'))).to.have.length(1);
    expect(
      Object.values(held)
        .map(Number)
        .reduce((sum, n) => sum + n, 0),
    ).to.equal(4);
    verified.socket.close();
    await waitFor('not ack-capable', async () => !(await capable()));
    const token = await pairToken(b.url, 'key');
    const session = await joined(b, 'key', { ...streamJoin(room), token });
    expect(session.answer).to.deep.include({ ok: true, recovered: true });
    expect(await capable()).to.equal(true);
    session.socket.close();
    await waitFor('not ack-capable', async () => !(await capable()));
    plain.socket.close();
    unsigned.socket.close();
    // Their leave is written before the next test's empty Redis, never into it.
    await waitFor('the key side left', async () => !(await presenceOf(b, room)).key.connected);
  });

  it('GET /v1/presence is a protected read: a session token of another pair is refused', async () => {
    const token = await pairToken(b.url, 'key');
    const res = await get(b.url, '/v1/presence/another-pair', bearer(token));
    expect(res.status).to.equal(401);
    expect(res.body.error.code).to.equal('AUTH_INVALID');
    const own = await get(b.url, `/v1/presence/${PAIR.wkIdentity}`, bearer(token));
    expect(own.status).to.equal(200);
    expect(own.body.data).to.deep.equal({ key: ALONE, wallet: ALONE });
  });

  it('a pod killed without cleanup stops counting within PRESENCE_TTL_SECONDS; the stream sockets hear it', async function () {
    this.timeout(90_000);
    const room = 'pr-killed';
    const pod = await startApiPod({ PRESENCE_TTL_SECONDS: '15' });
    try {
      const watcher = await joined(a, 'wallet', streamJoin(room));
      const doomed = client(pod.url, 'key', { wkIdentity: room }, { reconnection: false });
      await waitFor('the key side connected', async () => (await presenceOf(b, room)).key.connected);
      await waitFor('the presence event', () => dataOf(watcher.socket, 'presence').length === 1);
      pod.child.process.kill('SIGKILL');
      await waitFor('the socket gone', () => doomed.disconnects.length > 0);
      // The pod's key lives up to PRESENCE_TTL_SECONDS; the watching pod rereads its peers every third of its own,
      // so the event comes without any read.
      await waitFor('the presence event', () => dataOf(watcher.socket, 'presence').length === 2, 25_000);
      expect((await presenceOf(b, room)).key.connected).to.equal(false);
      const gone = dataOf(watcher.socket, 'presence')[1] as { lastSeen: string };
      expect(gone).to.deep.equal({
        wkIdentity: room,
        side: 'key',
        connected: false,
        lastSeen: gone.lastSeen,
      });
      expect(await redis().hgetall(keys.presence(room, 'key'))).to.deep.equal({
        lastSeen: String(Date.parse(gone.lastSeen)),
      });
    } finally {
      pod.child.kill();
    }
  });
});

describe('presence when Redis misbehaves (standalone; docs/operations.md#presence-and-pod-liveness)', function () {
  this.timeout(60_000);
  let proxy: TcpProxy;
  /** Pod a reaches Redis directly; pod c through the proxy. */
  let a: TestApi;
  let c: TestApi;
  const rejections: unknown[] = [];
  const rejected = (reason: unknown) => rejections.push(reason);
  before(async () => {
    process.on('unhandledRejection', rejected);
    proxy = await TcpProxy.start(testRedis().port);
    [a, c] = await Promise.all([
      startTestApi(),
      startTestApi({ REDIS_URL: proxy.url, PRESENCE_TTL_SECONDS: '15' }),
    ]);
  });
  after(async () => {
    await Promise.all([a?.stop(), c?.stop()]);
    await proxy?.stop();
    process.off('unhandledRejection', rejected);
  });

  const notWritten = () => c.logs.filter((line) => line.msg === 'presence not written').length;
  /** The pod of the only socket count in a side's hash. */
  async function podOf(room: string, side: Side): Promise<string> {
    const fields = Object.keys(await hashOf(redis(), room, side)).filter((field) => field.startsWith('j:'));
    expect(fields).to.have.length(1);
    return fields[0]!.slice(2);
  }

  it('a join and a leave whose writes failed are written once Redis answers again, each reported once', async () => {
    const room = 'pr-drift';
    const watcher = await joined(a, 'wallet', streamJoin(room));
    const events = () => dataOf(watcher.socket, 'presence') as SidePresence[];

    // The join's write times out: the pod's connection for counts stops forwarding (its other ones go on).
    expect(proxy.freeze('relay-store')).to.equal(1);
    const key = client(c.url, 'key', { wkIdentity: room });
    await waitFor('the write failed', () => notWritten() === 1);
    expect((await presenceOf(a, room)).key).to.deep.equal(ALONE);
    await proxy.cut();
    await proxy.restore();
    await waitFor('the presence event', () => events().length === 1);
    expect(events()[0]).to.deep.include({ side: 'key', connected: true });
    expect((await presenceOf(a, room)).key.connected).to.equal(true);
    const pod = await podOf(room, 'key');
    expect(await hashOf(redis(), room, 'key')).to.deep.equal({ [`j:${pod}`]: '1' });

    // The leave's write fails: Redis is out of reach.
    await proxy.cut();
    const leftAt = Date.now();
    key.close();
    await waitFor('the write failed', () => notWritten() === 2);
    expect((await presenceOf(a, room)).key.connected).to.equal(true);
    const restoredAt = Date.now();
    await proxy.restore();
    await waitFor('the presence event', () => events().length === 2);
    const gone = events()[1]!;
    expect(gone).to.deep.equal({ wkIdentity: room, side: 'key', connected: false, lastSeen: gone.lastSeen });
    // lastSeen is when the socket left, not when the count was written.
    expect(Date.parse(gone.lastSeen!)).to.be.within(leftAt - 1, restoredAt);
    const now = await presenceOf(a, room);
    expect(now).to.deep.equal({
      key: { connected: false, lastSeen: gone.lastSeen },
      wallet: { connected: true, lastSeen: now.wallet.lastSeen },
    });
    await waitFor('pod c serves again', async () => (await get(c.url, '/readyz')).status === 200);
    expect((await presenceOf(c, room)).key).to.deep.equal({ connected: false, lastSeen: gone.lastSeen });
    expect(await hashOf(redis(), room, 'key')).to.deep.equal({
      lastSeen: String(Date.parse(gone.lastSeen!)),
    });
    expect(events()).to.have.length(2);
    expect(c.logs.filter((line) => line.level === 'error')).to.deep.equal([]);
    expect(rejections).to.deep.equal([]);
  });

  it('counts of a live pod that other pods dropped (its liveness lost) are written again on its next renewal', async () => {
    const room = PAIR.wkIdentity;
    const watcher = await joined(a, 'wallet', streamJoin(room));
    const events = () => dataOf(watcher.socket, 'presence') as SidePresence[];
    const key = await joined(c, 'key', signed(streamJoin(room), { purpose: 'join', by: 'key' }));
    expect(key.answer).to.deep.include({ ok: true, recovered: true });
    await waitFor('the presence event', () => events().length === 1);
    const pod = await podOf(room, 'key');
    const counts = { [`j:${pod}`]: '1', [`a:${pod}`]: '1' };
    expect(await hashOf(redis(), room, 'key')).to.deep.equal(counts);

    // As a failover without replicas can: Redis loses the pod's liveness, and the next read drops its counts.
    await redis().del(keys.pod(pod));
    expect((await presenceOf(a, room)).key.connected).to.equal(false);
    expect(await ackCapable(redis(), keys, room, 'key')).to.equal(false);
    await waitFor('the presence event', () => events().length === 2);
    expect(events()[1]).to.deep.include({ side: 'key', connected: false });

    // Pod c's next renewal (a third of PRESENCE_TTL_SECONDS) finds its key gone and writes its counts again.
    await waitFor('the presence event', () => events().length === 3, 15_000);
    expect(events()[2]).to.deep.include({ side: 'key', connected: true });
    const held = await hashOf(redis(), room, 'key');
    expect(held).to.deep.equal({ ...counts, lastSeen: held.lastSeen });
    expect(await redis().exists(keys.pod(pod))).to.equal(1);
    expect((await presenceOf(a, room)).key.connected).to.equal(true);
    expect(await ackCapable(redis(), keys, room, 'key')).to.equal(true);
    key.socket.close();
    await waitFor('the presence event', () => events().length === 4);
    expect(events()[3]).to.deep.include({ side: 'key', connected: false });
    expect(rejections).to.deep.equal([]);
  });
});

describe('the presence sweep (docs/operations.md#presence-and-pod-liveness)', () => {
  it('costs one HGETALL per peer and one EXISTS per pod they name; only a peer naming a dead pod is settled', async () => {
    const rooms = Array.from({ length: 40 }, (_, i) => `pr-sweep-${i}`);
    for (const [i, room] of rooms.entries()) {
      await redis().hset(keys.presence(room, 'key'), `j:live-${i % 2}`, 1);
    }
    // Room 7's key side also has a socket on a dead pod; room 8's only there.
    await redis().hset(keys.presence(rooms[7]!, 'key'), 'j:dead', 2, 'a:dead', 1);
    await redis().del(keys.presence(rooms[8]!, 'key'));
    await redis().hset(keys.presence(rooms[8]!, 'key'), 'j:dead', 1);
    await redis().set(keys.pod('live-0'), '1', 'EX', 60);
    await redis().set(keys.pod('live-1'), '1', 'EX', 60);
    const changed: unknown[] = [];
    const presence = new Presence({
      redis: redis(),
      keys,
      pod: 'sweeper',
      ttlSeconds: 15,
      lastSeenSeconds: 86_400,
      log: createLogger('error', {}, () => {}),
      changed: (room, side, now) => changed.push({ room, side, connected: now.connected }),
      // Each room's wallet side is this pod's stream socket, twice for one of them.
      streamRooms: () => [...rooms, rooms[0]!].map((room) => ['wallet', room] as const),
    });

    const commands = await commandsDuring(() => presence.sweep());
    const named = (name: string) => commands.filter(([command]) => command!.toLowerCase() === name);
    expect(
      named('hgetall')
        .map(([, key]) => key)
        .sort(),
    ).to.deep.equal(rooms.map((room) => keys.presence(room, 'key')).sort());
    expect(
      named('exists')
        .map(([, key]) => key)
        .sort(),
    ).to.deep.equal(['dead', 'live-0', 'live-1'].map((pod) => keys.pod(pod)));
    const reaped = commands.filter(([command]) => /^eval/i.test(command!)).map((args) => args[3]);
    expect([...new Set(reaped)].sort()).to.deep.equal(
      [rooms[7], rooms[8]].map((room) => keys.presence(room!, 'key')),
    );
    expect(commands).to.have.length(rooms.length + 3 + reaped.length);
    expect(changed).to.deep.equal([{ room: rooms[8], side: 'key', connected: false }]);
    expect(await redis().hgetall(keys.presence(rooms[7]!, 'key'))).to.deep.equal({
      'j:live-1': '1',
      lastSeen: (await redis().hget(keys.presence(rooms[7]!, 'key'), 'lastSeen'))!,
    });

    // With every pod alive: the reads only.
    const again = await commandsDuring(() => presence.sweep());
    expect(again).to.have.length(rooms.length + 2);
    expect(changed).to.have.length(1);
  });
});
