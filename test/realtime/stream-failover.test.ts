import { expect } from 'chai';
import { Redis } from 'ioredis';
import type { Side } from '../../src/core/sides.js';
import { get, post, startTestApi, twoPods, type TestApi } from '../helpers/api.js';
import { redis } from '../helpers/redis.js';
import { PAIR, signed } from '../helpers/signing.js';
import { closedAfterEach, connected } from '../helpers/sockets.js';
import { keys, startTopology, type TestTopology, type TopologyName } from '../helpers/topologies.js';
import { waitFor } from '../helpers/wait.js';

const client = closedAfterEach();

interface Stored {
  id: string;
  action: string;
  epoch: string;
  offset: number;
}

interface Position {
  epoch?: string;
  offset: number;
}

interface JoinAnswer {
  ok: boolean;
  recovered?: boolean;
  epoch?: string | null;
  offset?: number;
  replayed?: number;
  code?: string;
}

const TYPES: Record<Side, string> = { key: 'tx', wallet: 'txid' };

/** How long a failover may take on a loaded machine: promotion, the old master's rejoin, the pods' reconnects. */
const RECOVERY_MS = 45_000;

/**
 * A stream socket as a resuming app makes it: on every connection it joins from the last position it holds, which
 * each record and each join answer moves (docs/api.md#resuming-the-stream).
 */
function streamSocket(api: TestApi, side: Side, room: string, since: Position = { offset: 0 }) {
  const socket = client(api.url, side, undefined);
  const answers: JoinAnswer[] = [];
  let position: Position = since;
  socket.socket.onAny((_event: string, data: Partial<Stored>) => {
    if (typeof data?.offset === 'number') position = { epoch: data.epoch!, offset: data.offset };
  });
  socket.socket.on('connect', () => {
    socket.socket.emit('join', { wkIdentity: room, since: position }, (answer: JoinAnswer) => {
      answers.push(answer);
      if (answer.ok)
        position = { ...(answer.epoch ? { epoch: answer.epoch } : {}), offset: answer.offset ?? 0 };
    });
  });
  const records = () => socket.received.filter((r) => r.event === TYPES[side]).map((r) => r.data as Stored);
  return { socket, answers, records };
}

/** POSTs a record of `side`'s direction until one is acknowledged (503 while the topology recovers). */
async function acknowledged(api: TestApi, room: string, side: Side, payload: string): Promise<Stored> {
  let stored: Stored | undefined;
  const body = { chain: 'btc', wkIdentity: room, action: TYPES[side], payload, path: '0-0' };
  await waitFor(
    `record ${payload} acknowledged`,
    async () => {
      const res = await post(api.url, '/v1/action', body).catch(() => undefined);
      if (res?.status === 200) stored = res.body.data as Stored;
      return stored !== undefined;
    },
    RECOVERY_MS,
  );
  return stored!;
}

/** A room whose stream and whose room channel live on one master: its failover interrupts the pods' subscription. */
async function roomOnOneMaster(topology: TestTopology, prefix: string, side: Side): Promise<string> {
  for (let i = 0; ; i++) {
    const room = `${prefix}-${i}`;
    const [stream, channel] = await Promise.all([
      topology.serversOf(keys.stream(room, side)),
      topology.serversOf(keys.roomChannel(side, room)),
    ]);
    if (stream.master === channel.master) return room;
  }
}

/** Kills the master of `key` and waits until a replica serves it, then restarts the old master as a replica. */
async function failOver(topology: TestTopology, key: string, beforePromotion: () => void = () => {}) {
  const { master: victim } = await topology.serversOf(key);
  await victim.stop(); // SIGKILL: whatever it had not replicated is gone
  beforePromotion();
  await waitFor(
    'a replica to be promoted',
    async () => (await topology.serversOf(key).catch(() => undefined))?.master !== victim,
    RECOVERY_MS,
  );
  await topology.rejoin(victim);
}

const offsetsOf = (records: Stored[]) => records.map(({ epoch, offset }) => `${epoch}/${offset}`);

/**
 * The pair's stream across a failover (docs/operations.md#failover-and-the-stream), on the topologies with
 * replicas, with two pods. Each case starts from a fresh topology (a failover leaves nodes rejoining).
 */
for (const name of ['sentinel', 'cluster'] as TopologyName[]) {
  describe(`the pair's stream across a failover on a ${name} Redis`, function () {
    this.timeout(3 * RECOVERY_MS);
    let topology: TestTopology;
    let a: TestApi;
    let b: TestApi;

    const start = async (env: Record<string, string>) => {
      topology = await startTopology(name);
      [a, b] = await Promise.all([
        startTestApi({ ...topology.env, ...env }),
        startTestApi({ ...topology.env, ...env }),
      ]);
    };
    afterEach(async () => {
      await Promise.all([a?.stop(), b?.stop()]);
      await topology?.stop();
    });

    it('REDIS_WAIT_REPLICAS=1: a join with since during the failover gets every record once, in order, recovered; acknowledged appends keep their offsets', async () => {
      // A POST that answers 503 while the old master resyncs is stored all the same: room for all of them.
      await start({ REDIS_WAIT_REPLICAS: '1', REDIS_WAIT_TIMEOUT_MS: '300', STREAM_LENGTH: '300' });
      const side = 'key';
      const room = await roomOnOneMaster(topology, `${name}-replay`, side);
      const before = [];
      for (const payload of ['01', '02', '03']) before.push(await acknowledged(a, room, side, payload));
      const { epoch } = before[0]!;
      expect(offsetsOf(before)).to.deep.equal([1, 2, 3].map((n) => `${epoch}/${n}`));

      let resumed: ReturnType<typeof streamSocket> | undefined;
      // The socket joins from offset 1 while the master is down: its replay is read during the failover.
      await failOver(topology, keys.stream(room, side), () => {
        resumed = streamSocket(b, side, room, { epoch, offset: 1 });
      });
      const socket = resumed!;
      const across = await acknowledged(a, room, side, '04');
      const after = await acknowledged(a, room, side, '05');
      // The appends acknowledged before the failover kept their offsets: the next ones follow them in the same
      // epoch (after any a POST answered 503 for: stored, but not acknowledged, and sent again).
      expect(across.epoch).to.equal(epoch);
      expect(across.offset).to.be.above(3);
      expect(after.epoch).to.equal(epoch);
      expect(after.offset).to.be.above(across.offset);
      // The stream as the promoted replica holds it: every record, acknowledged ones included, offsets 1, 2, ….
      const read = await get(a.url, `/v1/action/${room}?to=${side}&after=0`);
      expect(read.status).to.equal(200);
      expect(read.body.data).to.include({ epoch, offset: after.offset, recovered: true });
      const stream = read.body.data.records as Stored[];
      expect(stream.map((r) => r.offset)).to.deep.equal(
        Array.from({ length: after.offset }, (_, i) => i + 1),
      );
      expect(stream.slice(0, 3).map((r) => r.id)).to.deep.equal(before.map((r) => r.id));
      expect(stream.map((r) => r.id)).to.include.members([across.id, after.id]);

      // Each record after the join's position once, in offset order, without a gap.
      await waitFor(
        'the records after the first',
        () => socket.records().length >= after.offset - 1,
        RECOVERY_MS,
      );
      expect(socket.records().map((r) => r.id)).to.deep.equal(stream.slice(1).map((r) => r.id));
      // Every join that succeeded recovered.
      const joined = socket.answers.filter((answer) => answer.ok);
      expect(joined.length).to.be.greaterThan(0);
      expect(joined.map((answer) => answer.recovered)).to.not.include(false);
      expect(a.logs.concat(b.logs).filter((line) => line.msg === 'unhandled error')).to.deep.equal([]);
    });

    it('REDIS_WAIT_REPLICAS=0: appends the replica never got are lost with the failover; the stream socket and the next reads learn recovered: false under a new epoch, and the next record is offset 1 in it', async () => {
      // Every joined socket is authenticated: its app's word for the position it was sent counts.
      await start({ AUTH_ROUTES: 'ack=off' });
      const side = 'key';
      const room = await roomOnOneMaster(topology, `${name}-lost`, side);
      const socket = streamSocket(b, side, room);
      await connected(socket.socket);
      await waitFor('the first join', () => socket.answers.length === 1);
      expect(socket.answers[0]).to.include({ ok: true, recovered: true, epoch: null, offset: 0 });

      const kept = [await acknowledged(a, room, side, '01'), await acknowledged(a, room, side, '02')];
      const { epoch } = kept[0]!;
      const { master, replicas } = await topology.serversOf(keys.stream(room, side));
      const replica = replicas[0]!;
      const replicaProbe = new Redis({ port: replica.port, lazyConnect: true });
      const masterProbe = new Redis({ port: master.port, lazyConnect: true });
      let lost: Stored[] | undefined;
      try {
        // A cluster's replica answers reads of its slots only to a connection that asked for it.
        if (name === 'cluster') await replicaProbe.call('READONLY');
        await waitFor(
          'the replica to hold the first appends',
          async () => (await replicaProbe.xlen(keys.stream(room, side))) === 2,
        );
        // The replica frozen and its link cut: it takes nothing more, whatever the kernel would still have buffered.
        replica.signal('SIGSTOP');
        try {
          await masterProbe.call('CLIENT', 'KILL', 'TYPE', 'replica');
          lost = [await acknowledged(a, room, side, '03'), await acknowledged(a, room, side, '04')];
          expect(offsetsOf(lost)).to.deep.equal([`${epoch}/3`, `${epoch}/4`]);
          await waitFor('the stream socket to get the records', () => socket.records().length === 4);
          await failOver(topology, keys.stream(room, side), () => replica.signal('SIGCONT'));
        } finally {
          // A step that failed before the failover leaves it frozen otherwise (a second SIGCONT does nothing).
          replica.signal('SIGCONT');
        }
      } finally {
        replicaProbe.disconnect();
        masterProbe.disconnect();
      }

      // The relay finds offset 2 where it delivered 4 (the pod holding the socket, or the socket's authenticated join
      // once it reconnected): a new epoch, and the socket resumes, told that it did not recover.
      const resumed = await waitFor(
        'the socket to resume',
        () => socket.answers.slice(1).find((answer) => answer.ok),
        RECOVERY_MS,
      );
      expect(resumed).to.include({ ok: true, recovered: false, offset: 0, replayed: 0 });
      const renewed = resumed.epoch!;
      expect(renewed).to.be.a('string').and.not.equal(epoch);
      expect(socket.socket.disconnects.length).to.be.above(0);
      expect(socket.socket.disconnects.filter((reason) => reason !== 'transport close')).to.deep.equal([]);

      // Any reader that holds the lost position learns it too, on any pod.
      const read = await get(a.url, `/v1/action/${room}?to=${side}&after=4&epoch=${epoch}`);
      expect(read.status).to.equal(200);
      expect(read.body.data).to.deep.equal({ epoch: renewed, offset: 0, recovered: false, records: [] });
      const joiner = streamSocket(a, side, room, { epoch, offset: 4 });
      await waitFor('the join on the other pod', () => joiner.answers.length === 1);
      expect(joiner.answers[0]).to.include({ ok: true, recovered: false, epoch: renewed, offset: 0 });

      const next = await acknowledged(a, room, side, '05');
      expect([next.epoch, next.offset]).to.deep.equal([renewed, 1]);
      await waitFor('the next record', () => socket.records().length === 5);
      // Every record once: the lost ones as they were delivered before the failover, then the new epoch.
      expect(offsetsOf(socket.records())).to.deep.equal([...offsetsOf([...kept, ...lost!]), `${renewed}/1`]);
      expect(socket.records().map((r) => r.id)).to.deep.equal([...kept, ...lost!, next].map((r) => r.id));
      expect(await topology.admin.hget(keys.streamMeta(room, side), 'epoch')).to.equal(renewed);
    });
  });
}

/**
 * What a failover without REDIS_WAIT_REPLICAS leaves, made on a single Redis by hand: the stream and its metadata
 * as they were before the last append (docs/operations.md#failover-and-the-stream).
 */
async function loseLastAppend(room: string, side: Side): Promise<void> {
  const [last] = await redis().xrevrange(keys.stream(room, side), '+', '-', 'COUNT', 1);
  await redis().xdel(keys.stream(room, side), last![0]);
  await redis().hincrby(keys.streamMeta(room, side), 'offset', -1);
}

describe('a position lost in Redis, on a single Redis with two pods (docs/operations.md#failover-and-the-stream)', function () {
  this.timeout(30_000);
  const pods = twoPods();
  const side = 'key';

  it('a live record that reuses an offset a stream socket was sent: a new epoch, and the socket resumes with recovered: false', async () => {
    const room = 'sf-reused';
    const socket = streamSocket(pods.b, side, room);
    await waitFor('the first join', () => socket.answers.length === 1);
    const kept = await acknowledged(pods.a, room, side, '01');
    const gone = await acknowledged(pods.a, room, side, '02');
    await waitFor('the records', () => socket.records().length === 2);
    await loseLastAppend(room, side);

    // The next POST is given offset 2 again: the socket's pod finds another record than the one it sent there.
    const reused = await acknowledged(pods.a, room, side, '03');
    expect([reused.epoch, reused.offset]).to.deep.equal([kept.epoch, 2]);
    const resumed = await waitFor('the socket to resume', () => socket.answers[1]);
    const renewed = resumed.epoch!;
    expect(renewed).to.be.a('string').and.not.equal(kept.epoch);
    expect(resumed).to.deep.include({ ok: true, recovered: false, offset: 0, replayed: 0 });
    expect(socket.socket.disconnects).to.deep.equal(['transport close']);
    expect(await redis().exists(keys.stream(room, side))).to.equal(0);

    const next = await acknowledged(pods.a, room, side, '04');
    expect([next.epoch, next.offset]).to.deep.equal([renewed, 1]);
    await waitFor('the next record', () => socket.records().length === 3);
    expect(socket.records().map((r) => r.id)).to.deep.equal([kept.id, gone.id, next.id]);
  });

  it('a join naming an offset above the last: only a join authenticated for the side draws a new epoch', async () => {
    const room = PAIR.wkIdentity;
    const stored = [
      await acknowledged(pods.a, room, side, '01'),
      await acknowledged(pods.a, room, side, '02'),
    ];
    const { epoch } = stored[0]!;
    const since = { epoch, offset: 3 };
    const join = { wkIdentity: room, since };

    // A stranger's word changes nothing: not recovered, in the same epoch.
    const stranger = client(pods.b.url, side, undefined);
    await connected(stranger);
    expect(await stranger.socket.timeout(5000).emitWithAck('join', join)).to.deep.include({
      ok: true,
      recovered: false,
      epoch,
      offset: 2,
      replayed: 0,
    });
    expect(await redis().hget(keys.streamMeta(room, side), 'epoch')).to.equal(epoch);

    // The key app's signed join: the relay gave it offset 3, which Redis no longer holds.
    const app = client(pods.b.url, side, undefined);
    await connected(app);
    const answer = (await app.socket
      .timeout(5000)
      .emitWithAck('join', signed(join, { purpose: 'join', by: side }))) as JoinAnswer;
    expect(answer).to.deep.include({ ok: true, recovered: false, offset: 0, replayed: 0 });
    expect(answer.epoch).to.be.a('string').and.not.equal(epoch);
    expect(await redis().hget(keys.streamMeta(room, side), 'epoch')).to.equal(answer.epoch);
    // The stranger's socket was still in the old epoch: it resumes.
    await waitFor('the other socket closed', () => stranger.disconnects.length === 1);
    expect(stranger.disconnects).to.deep.equal(['transport close']);
    const next = await acknowledged(pods.a, room, side, '03');
    expect([next.epoch, next.offset]).to.deep.equal([answer.epoch, 1]);
  });
});
