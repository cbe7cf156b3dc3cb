import { expect } from 'chai';
import { io, type Socket } from 'socket.io-client';
import type { Side } from '../../src/core/sides.js';
import { freePort } from '../../src/core/redis/server.js';
import { post } from '../helpers/api.js';
import { startApiPod, type ApiPod } from '../helpers/child.js';
import { roomSubscribers } from '../helpers/sockets.js';
import { waitFor } from '../helpers/wait.js';

/** An API pod in its own process, so that its metrics are its own. */
interface Pod extends ApiPod {
  /** A counter's value for `path="key"` from the pod's metrics listener. */
  keyCounter(name: string): Promise<number>;
}

async function startPod(env: Record<string, string> = {}): Promise<Pod> {
  const metricsPort = await freePort();
  const pod = await startApiPod({ METRICS_PORT: String(metricsPort), ...env });
  return {
    ...pod,
    keyCounter: async (name) => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(`${name}{path="key"}`));
      return line === undefined ? 0 : Number(line.split(' ')[1]);
    },
  };
}

interface Joined {
  socket: Socket;
  /** Ids of the records received, in order. */
  ids: string[];
}

/** A socket.io-client socket on `pod`, joined to `room` (acknowledged: the pod hears the room from then on). */
async function joinedOn(pod: Pod, side: Side, room: string): Promise<Joined> {
  const socket = io(pod.url, { path: `/v1/socket/${side}`, transports: ['websocket'] });
  const joined: Joined = { socket, ids: [] };
  socket.onAny((_event: string, data: { id: string }) => joined.ids.push(data.id));
  expect(await socket.emitWithAck('join', { wkIdentity: room })).to.include({ ok: true });
  return joined;
}

const tx = (wkIdentity: string) => ({ chain: 'btc', wkIdentity, action: 'tx', payload: 'ab', path: '0-0' });

/** Posts `count` requests for `room` through `pod`: their record ids, in order. */
async function postMany(pod: Pod, room: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await post(pod.url, '/v1/action', tx(room));
    expect(res.status).to.equal(200);
    ids.push(res.body.data.id as string);
  }
  return ids;
}

const NOTICES = 'relay_socket_notices_received_total';
const BYTES = 'relay_socket_notice_bytes_received_total';

describe('cross-pod events on room channels (docs/operations.md#cross-pod-events)', function () {
  this.timeout(150_000); // three pods' cold starts at once, on a busy machine
  const sockets: Socket[] = [];
  const pods: Pod[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.close();
    await Promise.all(pods.splice(0).map((pod) => pod.stop()));
  });
  const track = (joined: Joined) => {
    sockets.push(joined.socket);
    return joined;
  };
  const start = async (count: number, env?: Record<string, string>) => {
    const started = await Promise.all(Array.from({ length: count }, () => startPod(env)));
    pods.push(...started);
    return started;
  };

  it('a pod receives the notices of the rooms it holds sockets in and no others; each socket gets its records once, in order', async () => {
    const [a, b, c] = (await start(3)) as [Pod, Pod, Pod];
    const onA = track(await joinedOn(a, 'key', 'scoped1'));
    const onB = track(await joinedOn(b, 'key', 'scoped2'));
    const before = await Promise.all([a, b, c].map((pod) => pod.keyCounter(NOTICES)));
    expect(before).to.deep.equal([0, 0, 0]);

    const first = await postMany(c, 'scoped1', 10);
    const second = await postMany(c, 'scoped2', 10);
    await waitFor('every record', () => onA.ids.length === 10 && onB.ids.length === 10);
    expect(onA.ids).to.deep.equal(first);
    expect(onB.ids).to.deep.equal(second);
    // Pod a heard pair scoped1's ten records only, pod b scoped2's; pod c, holding no socket, heard none.
    expect(await Promise.all([a, b, c].map((pod) => pod.keyCounter(NOTICES)))).to.deep.equal([10, 10, 0]);
    // Each notice is the record and a header of the pod's id and the room: a few hundred bytes here.
    const bytes = await Promise.all([a, b, c].map((pod) => pod.keyCounter(BYTES)));
    expect(bytes[2]).to.equal(0);
    for (const received of bytes.slice(0, 2)) expect(received).to.be.within(10 * 150, 10 * 600);
  });

  it('a room’s channel is subscribed while the pod holds a socket of the room, and left with its last one', async () => {
    const [a] = (await start(1)) as [Pod];
    expect(await roomSubscribers('key', 'held1')).to.equal(0);
    const one = track(await joinedOn(a, 'key', 'held1'));
    const two = track(await joinedOn(a, 'key', 'held1'));
    // One subscription per pod, however many of its sockets are in the room; the wallet path's is its own.
    expect(await roomSubscribers('key', 'held1')).to.equal(1);
    expect(await roomSubscribers('wallet', 'held1')).to.equal(0);
    one.socket.emit('leave', { wkIdentity: 'held1' });
    await postMany(a, 'held1', 1);
    await waitFor('the record on the socket still in the room', () => two.ids.length === 1);
    expect(await roomSubscribers('key', 'held1')).to.equal(1);
    two.socket.close();
    await waitFor('the channel left', async () => (await roomSubscribers('key', 'held1')) === 0);
    expect(one.ids).to.deep.equal([]);
  });

  it('SOCKET_CHANNEL_PARTITIONS=2: rooms share hashed channels; a pod hears its partitions’ notices and delivers its own rooms’ only', async () => {
    const [a, b] = (await start(2, { SOCKET_CHANNEL_PARTITIONS: '2' })) as [Pod, Pod];
    // Three rooms on pod a: two of them share a partition (pigeonhole), so pod a hears notices of a room it may not hold.
    const rooms = ['part1', 'part2', 'part3'];
    const joined = await Promise.all(rooms.map(async (room) => track(await joinedOn(a, 'key', room))));
    const posted: string[][] = [];
    for (const room of rooms) posted.push(await postMany(b, room, 3));
    await waitFor('every record', () => joined.every((j) => j.ids.length === 3));
    joined.forEach((j, i) => expect(j.ids).to.deep.equal(posted[i]));
    expect(await a.keyCounter(NOTICES)).to.equal(9);
    expect(await b.keyCounter(NOTICES)).to.equal(0);
    // A room pod a does not hold: its partition's notices reach pod a, which delivers them to nobody.
    const stranger = track(await joinedOn(b, 'key', 'part4'));
    await postMany(b, 'part4', 2);
    await waitFor('the stranger’s records', () => stranger.ids.length === 2);
    expect(joined.map((j) => j.ids.length)).to.deep.equal([3, 3, 3]);
  });
});
