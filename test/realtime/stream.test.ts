import { expect } from 'chai';
import { Redis } from 'ioredis';
import type { Side } from '../../src/core/sides.js';
import { registry } from '../../src/core/metrics.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { WriteAck } from '../../src/core/redis/write-ack.js';
import { ActionStore, type ActionRecord } from '../../src/mailbox/index.js';
import { newRecordId } from '../../src/core/record-id.js';
import { post, startTestApi, type TestApi } from '../helpers/api.js';
import { testRedis } from '../helpers/redis.js';
import {
  closedAfterEach,
  connected,
  joinAnswered,
  roomSubscribers,
  type TestClient,
} from '../helpers/sockets.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { TOPOLOGIES, twoPodsOn, type TestTopology } from '../helpers/topologies.js';
import { waitFor } from '../helpers/wait.js';

const keys = keysFor('relay:');
const client = closedAfterEach();

interface Stored {
  id: string;
  action: string;
  epoch: string;
  offset: number;
}

const TYPES: Record<Side, string> = { key: 'tx', wallet: 'txid' };

const body = (wkIdentity: string, side: Side, payload = 'aa') => ({
  chain: 'btc',
  wkIdentity,
  action: TYPES[side],
  payload,
  path: '0-0',
});

async function store(api: TestApi, room: string, side: Side, payload?: string): Promise<Stored> {
  const res = await post(api.url, '/v1/action', body(room, side, payload));
  expect(res.status).to.equal(200);
  return res.body.data as Stored;
}

/** A socket on `side` that sends one join with an acknowledgement: its answer, once the replay was received. */
const resume = (api: TestApi, side: Side, join: unknown) => joinAnswered(client, api.url, side, join);

/** The other side's presence in a join's answer while it has no socket and was never seen. */
const ALONE = { connected: false, lastSeen: null };

const events = (socket: TestClient) => socket.received.map(({ event, data }) => ({ event, data }));
const asEvents = (records: Stored[]) => records.map((data) => ({ event: data.action, data }));

async function counter(name: string, labels: Record<string, string>): Promise<number> {
  return (await registry.getSingleMetric(name)!.get()).values
    .filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want))
    .reduce((sum, v) => sum + v.value, 0);
}

/**
 * What every stream socket must see: the records after its position, each once, in increasing offset order
 * without a gap, up to `last`.
 */
async function sawInOrder(socket: TestClient, from: number, last: number): Promise<void> {
  await waitFor(`offsets up to ${last}`, () => socket.received.length >= last - from);
  const offsets = socket.received.map(({ data }) => (data as Stored).offset);
  expect(offsets).to.deep.equal(Array.from({ length: last - from }, (_, i) => from + 1 + i));
}

/** The core cases, on every topology, with two pods. */
for (const name of TOPOLOGIES) {
  describe(`join with since on a ${name} Redis (docs/api.md#resuming-the-stream)`, function () {
    this.timeout(60_000);
    let topology: TestTopology;
    let a: TestApi;
    let b: TestApi;
    twoPodsOn(name, (pods) => ({ topology, a, b } = pods));

    for (const side of ['key', 'wallet'] as const) {
      it(`${side} path: the records after since, in order, then the answer; live records follow`, async () => {
        const room = `${name}-${side}-resume`;
        const stored = [];
        for (let i = 0; i < 4; i++) stored.push(await store(i % 2 ? a : b, room, side));
        const { epoch } = stored[0]!;
        const { socket, answer } = await resume(b, side, { wkIdentity: room, since: { epoch, offset: 1 } });
        expect(answer).to.deep.equal({
          ok: true,
          recovered: true,
          epoch,
          offset: 4,
          replayed: 3,
          peer: ALONE,
        });
        expect(events(socket)).to.deep.equal(asEvents(stored.slice(1)));
        const next = await store(a, room, side);
        await waitFor('the live record', () => socket.received.length === 4);
        expect(events(socket)).to.deep.equal(asEvents([...stored.slice(1), next]));
        // What Redis holds: the four records and the next, in offset order, in the pair's slot.
        const entries = await topology.admin.xrange(keys.stream(room, side), '-', '+');
        expect(entries.map(([, fields]) => JSON.parse(fields[3]!))).to.deep.equal([...stored, next]);
        expect(await topology.admin.hget(keys.streamMeta(room, side), 'offset')).to.equal('5');
      });
    }

    it('a join racing POSTs on both pods: every record after since once, in offset order, no gap', async () => {
      const room = `${name}-race`;
      const first = await store(a, room, 'wallet');
      // Fewer than STREAM_LENGTH: every record after since is still retained when the join reads the stream.
      const racing = Array.from({ length: 14 }, (_, i) => store(i % 2 ? a : b, room, 'wallet'));
      const { socket, answer } = await resume(b, 'wallet', {
        wkIdentity: room,
        since: { epoch: first.epoch, offset: 1 },
      });
      expect(answer).to.include({ ok: true, recovered: true, epoch: first.epoch });
      const stored = await Promise.all(racing);
      await sawInOrder(socket, 1, 15);
      const byOffset = new Map(stored.map((r) => [r.offset, r]));
      for (const { data } of socket.received)
        expect(data).to.deep.equal(byOffset.get((data as Stored).offset));
    });
  });
}

describe('join with since: recovered, the replay and its bounds (standalone)', () => {
  let a: TestApi;
  let b: TestApi;
  let short: TestApi;
  before(async () => {
    [a, b, short] = await Promise.all([startTestApi(), startTestApi(), startTestApi({ STREAM_LENGTH: '2' })]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop(), short?.stop()]);
  });

  it('offset 0 without epoch: every retained record, recovered', async () => {
    const stored = [await store(a, 'st-zero', 'key'), await store(b, 'st-zero', 'key')];
    const { socket, answer } = await resume(b, 'key', { wkIdentity: 'st-zero', since: { offset: 0 } });
    expect(answer).to.deep.equal({
      ok: true,
      recovered: true,
      epoch: stored[0]!.epoch,
      offset: 2,
      replayed: 2,
      peer: ALONE,
    });
    expect(events(socket)).to.deep.equal(asEvents(stored));
  });

  it('at the last offset: nothing replayed, recovered', async () => {
    const stored = await store(a, 'st-last', 'wallet');
    const since = { epoch: stored.epoch, offset: 1 };
    const { socket, answer } = await resume(b, 'wallet', { wkIdentity: 'st-last', since });
    expect(answer).to.deep.equal({
      ok: true,
      recovered: true,
      epoch: stored.epoch,
      offset: 1,
      replayed: 0,
      peer: ALONE,
    });
    expect(socket.received).to.deep.equal([]);
  });

  it('another epoch: every retained record, not recovered', async () => {
    const stored = [await store(a, 'st-epoch', 'key'), await store(a, 'st-epoch', 'key')];
    const since = { epoch: 'someOtherEpoch', offset: 1 };
    const { socket, answer } = await resume(b, 'key', { wkIdentity: 'st-epoch', since });
    expect(answer).to.deep.equal({
      ok: true,
      recovered: false,
      epoch: stored[0]!.epoch,
      offset: 2,
      replayed: 2,
      peer: ALONE,
    });
    expect(events(socket)).to.deep.equal(asEvents(stored));
  });

  it('an offset above the last one: nothing replayed, not recovered', async () => {
    const stored = await store(a, 'st-ahead', 'key');
    const since = { epoch: stored.epoch, offset: 9 };
    const { socket, answer } = await resume(b, 'key', { wkIdentity: 'st-ahead', since });
    expect(answer).to.deep.equal({
      ok: true,
      recovered: false,
      epoch: stored.epoch,
      offset: 1,
      replayed: 0,
      peer: ALONE,
    });
    expect(socket.received).to.deep.equal([]);
  });

  it('records after since trimmed (STREAM_LENGTH): what is retained, not recovered', async () => {
    const stored = [];
    for (let i = 0; i < 4; i++) stored.push(await store(short, 'st-trim', 'key'));
    const since = { epoch: stored[0]!.epoch, offset: 1 };
    const { socket, answer } = await resume(short, 'key', { wkIdentity: 'st-trim', since });
    expect(answer).to.deep.equal({
      ok: true,
      recovered: false,
      epoch: stored[0]!.epoch,
      offset: 4,
      replayed: 2,
      peer: ALONE,
    });
    expect(events(socket)).to.deep.equal(asEvents(stored.slice(2)));
    // From offset 2 on, the retained records 3 and 4 are all that is missing: recovered.
    const again = await resume(short, 'key', { wkIdentity: 'st-trim', since: { ...since, offset: 2 } });
    expect(again.answer).to.deep.equal({
      ok: true,
      recovered: true,
      epoch: stored[0]!.epoch,
      offset: 4,
      replayed: 2,
      peer: ALONE,
    });
  });

  it('a direction without a position: recovered only from offset 0', async () => {
    const empty = await resume(a, 'wallet', { wkIdentity: 'st-none', since: { offset: 0 } });
    expect(empty.answer).to.deep.equal({
      ok: true,
      recovered: true,
      epoch: null,
      offset: 0,
      replayed: 0,
      peer: ALONE,
    });
    const lost = await resume(a, 'wallet', {
      wkIdentity: 'st-none',
      since: { epoch: 'anEpochGone', offset: 3 },
    });
    expect(lost.answer).to.deep.equal({
      ok: true,
      recovered: false,
      epoch: null,
      offset: 0,
      replayed: 0,
      peer: ALONE,
    });
    // A record stored afterwards starts the direction: the stream sockets get it as offset 1.
    const first = await store(b, 'st-none', 'wallet');
    expect(first.offset).to.equal(1);
    await waitFor(
      'the first record',
      () => empty.socket.received.length === 1 && lost.socket.received.length === 1,
    );
    expect(events(empty.socket)).to.deep.equal(asEvents([first]));
  });

  it('a join without since is the plain join: its answer, the key replay of the current record only, none on the wallet path', async () => {
    const reply = await store(a, 'st-plain', 'wallet');
    const stored = [await store(a, 'st-plain', 'key'), await store(a, 'st-plain', 'key')];
    const key = await resume(b, 'key', { wkIdentity: 'st-plain' });
    const { epoch } = stored[1]!;
    expect(key.answer).to.deep.equal({ ok: true, epoch, offset: 2, peer: ALONE });
    await waitFor('the replay', () => key.socket.received.length === 1);
    expect(events(key.socket)).to.deep.equal(asEvents([stored[1]!]));
    const wallet = await resume(b, 'wallet', { wkIdentity: 'st-plain' });
    const { peer } = wallet.answer as { peer: { lastSeen: string } };
    expect(wallet.answer).to.deep.equal({
      ok: true,
      epoch: reply.epoch,
      offset: 1,
      peer: { connected: true, lastSeen: peer.lastSeen },
    });
    expect(wallet.socket.received).to.deep.equal([]);
  });

  it('a second join with since on the connection: records it had are not sent again', async () => {
    const stored = [await store(a, 'st-twice', 'key'), await store(a, 'st-twice', 'key')];
    const since = { epoch: stored[0]!.epoch, offset: 0 };
    const { socket, answer } = await resume(b, 'key', { wkIdentity: 'st-twice', since });
    expect(answer).to.include({ replayed: 2 });
    const third = await store(a, 'st-twice', 'key');
    await waitFor('the live record', () => socket.received.length === 3);
    const again: unknown = await socket.socket.emitWithAck('join', { wkIdentity: 'st-twice', since });
    expect(again).to.deep.equal({
      ok: true,
      recovered: true,
      epoch: third.epoch,
      offset: 3,
      replayed: 0,
      peer: ALONE,
    });
    expect(events(socket)).to.deep.equal(asEvents([...stored, third]));
  });

  it('counts recoveries by path and outcome, and the records replayed', async () => {
    const before = {
      yes: await counter('relay_stream_recoveries_total', { via: 'join', path: 'wallet', recovered: 'true' }),
      no: await counter('relay_stream_recoveries_total', { via: 'join', path: 'wallet', recovered: 'false' }),
      replayed: await counter('relay_stream_replayed_total', { path: 'wallet' }),
      appended: await counter('relay_stream_appends_total', { direction: 'wallet' }),
    };
    const stored = await store(a, 'st-metrics', 'wallet');
    await resume(b, 'wallet', { wkIdentity: 'st-metrics', since: { offset: 0 } });
    await resume(b, 'wallet', { wkIdentity: 'st-metrics', since: { epoch: stored.epoch, offset: 5 } });
    expect(
      await counter('relay_stream_recoveries_total', { via: 'join', path: 'wallet', recovered: 'true' }),
    ).to.equal(before.yes + 1);
    expect(
      await counter('relay_stream_recoveries_total', { via: 'join', path: 'wallet', recovered: 'false' }),
    ).to.equal(before.no + 1);
    expect(await counter('relay_stream_replayed_total', { path: 'wallet' })).to.equal(before.replayed + 1);
    expect(await counter('relay_stream_appends_total', { direction: 'wallet' })).to.equal(
      before.appended + 1,
    );
  });

  it('the join itself may carry other members (the released apps may send more): they are ignored', async () => {
    const stored = await store(a, 'st-more', 'key');
    const since = { epoch: stored.epoch, offset: 0 };
    const { socket, answer } = await resume(b, 'key', { wkIdentity: 'st-more', since, appVersion: '2.1' });
    expect(answer).to.include({ ok: true, recovered: true, replayed: 1 });
    expect(events(socket)).to.deep.equal(asEvents([stored]));
  });

  const EPOCH = 'abcdEFGH1234';
  for (const [label, since] of [
    ['not an object', 5],
    ['null', null],
    ['an array', [0]],
    ['no offset', { epoch: EPOCH }],
    ['a negative offset', { epoch: EPOCH, offset: -1 }],
    ['a fractional offset', { epoch: EPOCH, offset: 1.5 }],
    ['an offset above 2^53 − 1', { epoch: EPOCH, offset: 2 ** 53 }],
    ['an offset as a string', { epoch: EPOCH, offset: '1' }],
    ['an epoch too short', { epoch: 'abc', offset: 1 }],
    ['an epoch too long', { epoch: 'a'.repeat(33), offset: 1 }],
    ['an epoch with other characters', { epoch: 'abcd efgh', offset: 1 }],
    ['offset > 0 without epoch', { offset: 1 }],
    ['with another member', { epoch: EPOCH, offset: 1, extra: true }],
    ['at offset 0 with another member', { offset: 0, after: 3 }],
  ] as const) {
    it(`since ${label}: a bad join (INVALID_PARAMETER, then io server disconnect)`, async () => {
      await store(a, 'st-bad', 'key');
      const { socket, answer } = await resume(b, 'key', { wkIdentity: 'st-bad', since });
      expect(answer).to.deep.equal({ ok: false, code: 'INVALID_PARAMETER' });
      await waitFor('the disconnect', () => socket.disconnects.length > 0);
      expect(socket.disconnects).to.deep.equal(['io server disconnect']);
      expect(socket.received).to.deep.equal([]);
    });
  }
});

describe('in-order delivery to stream sockets (docs/api.md#resuming-the-stream)', () => {
  let api: TestApi;
  let short: TestApi;
  /** Writes records as the relay does, without telling any pod: the events of the next POST arrive ahead of them. */
  let silent: ActionStore;
  let silentShort: ActionStore;
  let direct: Redis;
  before(async () => {
    [api, short] = await Promise.all([startTestApi(), startTestApi({ STREAM_LENGTH: '1' })]);
    direct = new Redis(testRedis().url);
    const stream = { length: 16, maxBytes: 2_097_152, metaTtlSeconds: 86_400 };
    silent = new ActionStore(direct, keys, 900, stream, WriteAck.none);
    silentShort = new ActionStore(direct, keys, 900, { ...stream, length: 1 }, WriteAck.none);
  });
  after(async () => {
    direct?.disconnect();
    await Promise.all([api?.stop(), short?.stop()]);
  });

  const silently = async (target: ActionStore, room: string): Promise<Stored> => {
    const now = Date.now();
    const record: ActionRecord = {
      id: newRecordId(),
      ...body(room, 'key'),
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + 900_000).toISOString(),
    };
    return (await target.save(record, false, 'plain')).record as Stored;
  };

  it('a record that skips ahead waits; the missing one is read from the stream and sent first', async () => {
    const first = await store(api, 'io-fill', 'key');
    const { socket } = await resume(api, 'key', {
      wkIdentity: 'io-fill',
      since: { epoch: first.epoch, offset: 1 },
    });
    const replayed = await counter('relay_stream_replayed_total', { path: 'key' });
    const missing = await silently(silent, 'io-fill');
    const next = await store(api, 'io-fill', 'key');
    expect([missing.offset, next.offset]).to.deep.equal([2, 3]);
    await waitFor('both records', () => socket.received.length === 2);
    expect(events(socket)).to.deep.equal(asEvents([missing, next]));
    expect(await counter('relay_stream_replayed_total', { path: 'key' })).to.equal(replayed + 1);
    expect(socket.disconnects).to.deep.equal([]);
  });

  it('a missing record no longer retained: the transport closes (never io server disconnect); rejoined, not recovered', async () => {
    const first = await store(short, 'io-gap', 'key');
    const since = { epoch: first.epoch, offset: 1 };
    const socket = client(short.url, 'key', { wkIdentity: 'io-gap', since });
    await connected(socket);
    const closes = await counter('relay_stream_gap_closes_total', { path: 'key' });
    // Joined once a probe arrives live.
    const probe = await store(short, 'io-gap', 'key');
    await waitFor('the probe', () => socket.received.length === 1);
    expect(events(socket)).to.deep.equal(asEvents([probe]));
    await silently(silentShort, 'io-gap');
    const next = await store(short, 'io-gap', 'key');
    await waitFor('the transport closed', () => socket.disconnects.length > 0);
    expect(socket.disconnects[0]).to.equal('transport close');
    expect(await counter('relay_stream_gap_closes_total', { path: 'key' })).to.equal(closes + 1);
    // The client reconnects and joins again with its old position: the retained record, not recovered.
    await waitFor('the next record', () => socket.received.length === 2);
    expect(events(socket)).to.deep.equal(asEvents([probe, next]));
  });

  it('after the pod did not hear its rooms a while, its stream sockets on the wallet path get what they missed, in order', async () => {
    const proxy = await TcpProxy.start(testRedis().port);
    const c = await startTestApi({ REDIS_URL: proxy.url });
    try {
      const first = await store(api, 'io-resub', 'wallet');
      const since = { epoch: first.epoch, offset: 1 };
      const { socket, answer } = await resume(c, 'wallet', { wkIdentity: 'io-resub', since });
      expect(answer).to.include({ ok: true, recovered: true, replayed: 0 });
      await waitFor('pod c subscribed', async () => (await roomSubscribers('wallet', 'io-resub')) === 1);
      const replayed = await counter('relay_stream_replayed_total', { path: 'wallet' });
      await proxy.cut();
      await waitFor('pod c unsubscribed', async () => (await roomSubscribers('wallet', 'io-resub')) === 0);
      // Acknowledged while pod c hears nothing: their notices never reach it.
      const missed = [await store(api, 'io-resub', 'wallet'), await store(api, 'io-resub', 'wallet')];
      await proxy.restore();
      await waitFor('the records missed', () => socket.received.length === 2, 15_000);
      const next = await store(api, 'io-resub', 'wallet');
      await waitFor('the next record', () => socket.received.length === 3);
      expect(events(socket)).to.deep.equal(asEvents([...missed, next]));
      // Read from the stream, not heard live.
      expect(await counter('relay_stream_replayed_total', { path: 'wallet' })).to.equal(replayed + 2);
      expect(socket.disconnects).to.deep.equal([]);
    } finally {
      await c.stop();
      await proxy.stop();
    }
  });
});
