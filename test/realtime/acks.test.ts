import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/core/config/config.js';
import type { Side } from '../../src/core/sides.js';
import { registry } from '../../src/core/metrics.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { get, post, startTestApi, type TestApi } from '../helpers/api.js';
import { redis } from '../helpers/redis.js';
import { OTHER_PAIR, PAIR, signed } from '../helpers/signing.js';
import { closedAfterEach, connected, dataOf, type TestClient } from '../helpers/sockets.js';
import { TOPOLOGIES, twoPodsOn, type TestTopology } from '../helpers/topologies.js';
import { waitFor } from '../helpers/wait.js';

const keys = keysFor('relay:');
const client = closedAfterEach();

interface Stored {
  id: string;
  wkIdentity: string;
  action: string;
  epoch: string;
  offset: number;
}

const REQUEST = { chain: 'btc', action: 'tx', payload: 'aa', path: '0-0' };
const REPLY = { chain: 'btc', action: 'txid', payload: 'bb' };

async function store(api: TestApi, wkIdentity: string, to: Side = 'key'): Promise<Stored> {
  const res = await post(api.url, '/v1/action', { ...(to === 'key' ? REQUEST : REPLY), wkIdentity });
  expect(res.status).to.equal(200);
  return res.body.data as Stored;
}

/**
 * A socket on `side` joined to the pair's room: a stream socket (since) or a plain one, signed by that side's key
 * (authenticated) or not. Resolves once the join was answered.
 */
async function joined(
  api: TestApi,
  side: Side,
  options: { stream: boolean; signedBy?: Side; pair?: typeof PAIR } = { stream: true },
): Promise<TestClient> {
  const pair = options.pair ?? PAIR;
  const socket = client(api.url, side, undefined);
  await connected(socket);
  const join = { wkIdentity: pair.wkIdentity, ...(options.stream ? { since: { offset: 0 } } : {}) };
  const data = options.signedBy ? signed(join, { purpose: 'join', by: options.signedBy, pair }) : join;
  const answer = (await socket.socket.timeout(5000).emitWithAck('join', data)) as { ok: boolean };
  expect(answer.ok).to.equal(true);
  // The join's replay is not what these tests look at.
  socket.received.length = 0;
  return socket;
}

const ackOf = (socket: TestClient, data: unknown) => socket.socket.timeout(5000).emitWithAck('ack', data);

/** The HTTP ack, signed by `by` for the purpose `ack`. */
function httpAck(api: TestApi, id: string, by: Side = 'key', wkIdentity = PAIR.wkIdentity) {
  return post(
    api.url,
    `/v1/action/${wkIdentity}/${id}/ack`,
    signed({}, { purpose: 'ack', by, identity: wkIdentity }),
  );
}

async function acks(via: string, outcome: string): Promise<number> {
  const metric = await registry.getSingleMetric('relay_acks_total')!.get();
  return metric.values
    .filter((v) => v.labels.via === via && v.labels.outcome === outcome)
    .reduce((sum, v) => sum + v.value, 0);
}

/** The core case on every topology, with two pods. */
for (const name of TOPOLOGIES) {
  describe(`acks and receipts on a ${name} Redis (docs/api.md#acks-and-receipts)`, function () {
    this.timeout(60_000);
    let topology: TestTopology;
    let a: TestApi;
    let b: TestApi;
    twoPodsOn(name, (pods) => ({ topology, a, b } = pods));

    it('first ack wins across pods (socket on one, HTTP on the other); delivered reaches only the sender side stream sockets, once', async () => {
      const keySocket = await joined(a, 'key', { stream: true, signedBy: 'key' });
      const senders = [await joined(a, 'wallet'), await joined(b, 'wallet')];
      const plain = [
        await joined(a, 'wallet', { stream: false }),
        await joined(b, 'wallet', { stream: false }),
      ];
      const otherKey = await joined(b, 'key');
      const record = await store(a, PAIR.wkIdentity);
      const recordedBefore = (await acks('socket', 'recorded')) + (await acks('http', 'recorded'));
      const [bySocket, byHttp] = await Promise.all([
        ackOf(keySocket, { wkIdentity: PAIR.wkIdentity, id: record.id }),
        httpAck(b, record.id),
      ]);
      const receipt = JSON.parse((await topology.admin.hget(keys.receipts(PAIR.wkIdentity), record.id))!);
      expect(receipt).to.have.all.keys('side', 'at');
      expect(receipt.side).to.equal('key');
      expect(bySocket).to.deep.equal({ ok: true, delivered: receipt });
      expect(byHttp.status).to.equal(200);
      expect(byHttp.body.data).to.deep.equal({
        id: record.id,
        wkIdentity: PAIR.wkIdentity,
        action: 'tx',
        epoch: record.epoch,
        offset: record.offset,
        delivered: receipt,
      });
      expect((await acks('socket', 'recorded')) + (await acks('http', 'recorded'))).to.equal(
        recordedBefore + 1,
      );
      const ttl = await topology.admin.ttl(keys.receipts(PAIR.wkIdentity));
      expect(ttl).to.be.within(1, a.config.action.ttlSeconds);
      const event = {
        wkIdentity: PAIR.wkIdentity,
        id: record.id,
        action: 'tx',
        epoch: record.epoch,
        offset: record.offset,
        ...receipt,
      };
      for (const sender of senders) await waitFor('delivered', () => dataOf(sender, 'delivered').length > 0);

      // A repeat answers the first receipt and emits nothing; the next record's receipt comes after it.
      expect(await httpAck(a, record.id)).to.include({ status: 200 });
      expect(await ackOf(keySocket, { wkIdentity: PAIR.wkIdentity, id: record.id })).to.deep.equal({
        ok: true,
        delivered: receipt,
      });
      const next = await store(b, PAIR.wkIdentity);
      const nextAck = (await ackOf(keySocket, { wkIdentity: PAIR.wkIdentity, id: next.id })) as {
        delivered: object;
      };
      for (const sender of senders) await waitFor('delivered', () => dataOf(sender, 'delivered').length > 1);
      const nextEvent = { ...event, id: next.id, offset: next.offset, ...nextAck.delivered };
      for (const sender of senders) expect(dataOf(sender, 'delivered')).to.deep.equal([event, nextEvent]);
      for (const socket of [...plain, keySocket, otherKey])
        expect(dataOf(socket, 'delivered')).to.deep.equal([]);
      for (const socket of [keySocket, ...senders, ...plain]) expect(socket.disconnects).to.deep.equal([]);

      // GET shows the receipt of the mailbox's record, on either pod.
      for (const api of [a, b]) {
        const read = await get(api.url, `/v1/action/${PAIR.wkIdentity}`);
        expect(read.body.data).to.deep.equal({ ...next, delivered: nextAck.delivered });
      }
    });
  });
}

describe('acks: refusals record nothing and never disconnect (docs/api.md#acks-and-receipts)', function () {
  this.timeout(30_000);
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(() => api.stop());
  beforeEach(() => redis().del(keys.receipts(PAIR.wkIdentity), keys.receipts(OTHER_PAIR.wkIdentity)));

  async function refused(socket: TestClient, data: unknown, code: string): Promise<void> {
    expect(await ackOf(socket, data)).to.deep.equal({ ok: false, code });
    expect(
      await redis().exists(keys.receipts(PAIR.wkIdentity), keys.receipts(OTHER_PAIR.wkIdentity)),
    ).to.equal(0);
    expect(socket.socket.connected).to.equal(true);
    expect(socket.disconnects).to.deep.equal([]);
  }

  it('a shape outside the format: INVALID_PARAMETER', async () => {
    const socket = await joined(api, 'key', { stream: true, signedBy: 'key' });
    const record = await store(api, PAIR.wkIdentity);
    for (const data of [
      undefined,
      'x',
      [PAIR.wkIdentity, record.id],
      { wkIdentity: PAIR.wkIdentity },
      { id: record.id },
      { wkIdentity: PAIR.wkIdentity, id: 'a/b' },
      { wkIdentity: 'a b', id: record.id },
      { wkIdentity: PAIR.wkIdentity, id: 7 },
    ])
      await refused(socket, data, 'INVALID_PARAMETER');
  });

  it('an unauthenticated socket (an unsigned join): AUTH_REQUIRED; a plain one too', async () => {
    const record = await store(api, PAIR.wkIdentity);
    for (const stream of [true, false]) {
      const socket = await joined(api, 'key', { stream });
      await refused(socket, { wkIdentity: PAIR.wkIdentity, id: record.id }, 'AUTH_REQUIRED');
    }
  });

  it("not joined, the other direction's id, another pair's id, an unknown id: NOT_FOUND", async () => {
    const record = await store(api, PAIR.wkIdentity);
    const reply = await store(api, PAIR.wkIdentity, 'wallet');
    const other = await store(api, OTHER_PAIR.wkIdentity);
    const socket = await joined(api, 'key', { stream: true, signedBy: 'key' });
    await refused(socket, { wkIdentity: OTHER_PAIR.wkIdentity, id: other.id }, 'NOT_FOUND');
    await refused(socket, { wkIdentity: PAIR.wkIdentity, id: reply.id }, 'NOT_FOUND');
    await refused(socket, { wkIdentity: PAIR.wkIdentity, id: other.id }, 'NOT_FOUND');
    await refused(socket, { wkIdentity: PAIR.wkIdentity, id: 'AAAAAAAAAAAAAAAAAAAAAA' }, 'NOT_FOUND');
    socket.socket.emit('leave', { wkIdentity: PAIR.wkIdentity });
    await refused(socket, { wkIdentity: PAIR.wkIdentity, id: record.id }, 'NOT_FOUND');
    // The wallet's own socket acknowledges the reply, never the request to the key.
    const wallet = await joined(api, 'wallet', { stream: true, signedBy: 'wallet' });
    await refused(wallet, { wkIdentity: PAIR.wkIdentity, id: record.id }, 'NOT_FOUND');
    expect(await ackOf(wallet, { wkIdentity: PAIR.wkIdentity, id: reply.id })).to.have.property('ok', true);
  });

  it('acks draw on the join budget: over it, RATE_LIMITED', async () => {
    const limited = await startTestApi({ RATE_LIMIT_POINTS: '3' });
    try {
      const socket = await joined(limited, 'key', { stream: true, signedBy: 'key' });
      const record = await store(limited, PAIR.wkIdentity);
      const before = await acks('socket', 'rate_limited');
      // The join spent one point; two acks of an unknown id spend the others.
      for (let i = 0; i < 2; i++)
        await refused(socket, { wkIdentity: PAIR.wkIdentity, id: 'AAAAAAAAAAAAAAAAAAAAAA' }, 'NOT_FOUND');
      await refused(socket, { wkIdentity: PAIR.wkIdentity, id: record.id }, 'RATE_LIMITED');
      expect(await acks('socket', 'rate_limited')).to.equal(before + 1);
      // The budget's point and the ack are one script: over the budget, no receipt.
      expect(await redis().hexists(keys.receipts(PAIR.wkIdentity), record.id)).to.equal(0);
    } finally {
      await limited.stop();
    }
  });

  it('AUTH_ROUTES ack=off: any joined socket may ack; ack=optional is a start-up error', async () => {
    expect(() => loadConfig({ AUTH_ROUTES: 'ack=optional' })).to.throw(
      ConfigError,
      'ack=required or ack=off',
    );
    expect(loadConfig({ AUTH_MODE: 'off' }).auth.modes.ack).to.equal('required');
    const open = await startTestApi({ AUTH_ROUTES: 'ack=off' });
    try {
      const socket = await joined(open, 'key', { stream: false });
      const record = await store(open, PAIR.wkIdentity);
      const answer = (await ackOf(socket, { wkIdentity: PAIR.wkIdentity, id: record.id })) as {
        delivered: { side: string };
      };
      expect(answer.delivered.side).to.equal('key');
      expect(await redis().hexists(keys.receipts(PAIR.wkIdentity), record.id)).to.equal(1);
    } finally {
      await open.stop();
    }
  });
});
