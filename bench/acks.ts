/**
 * `acks` phase of `npm run bench` (docs/api.md#acks-and-receipts): two more API pods with `AUTH_ROUTES=ack=off`
 * (so a plain join may ack: the cost measured is the ack's, not a join signature's). One request to the key is
 * stored first per pair (an app acknowledges the record it just received: its stream's newest); key sockets on
 * pod a, joined to every pair room, acknowledge them by socket at a steady rate, and wallet stream sockets on pod
 * b, joined to every pair room with since, receive the `delivered` events. Figures: pod a's CPU per ack (goal
 * ≤ 40 µs) and the ack → `delivered` on pod b latency p50/p99 (goal p99 ≤ 100 ms at 1,000 acks/s).
 */
import { io, type Socket } from 'socket.io-client';
import { cpuMsOf, round, type Child } from './children.js';
import { onSchedule, percentile } from './load.js';
import { verdict, type Bench, type Phase } from './phase.js';
import { freePort } from '../src/core/redis/server.js';

const RATE = 1000;
const SECONDS = 5;
const PAIRS = RATE * SECONDS;
/** Pair rooms per socket (SOCKET_ROOMS_MAX of the pods). */
const ROOMS_PER_SOCKET = 1000;
const CPU_GOAL_US = 40;
const LATENCY_GOAL_MS = 100;

const pairOf = (n: number) => `bench-ack-${n}`;

function connect(pod: Child, side: 'key' | 'wallet'): Promise<Socket> {
  const socket = io(pod.url, { path: `/v1/socket/${side}`, transports: ['websocket'] });
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(socket));
    socket.once('connect_error', reject);
  });
}

/** Sockets of `side` on `pod`, each joined to ROOMS_PER_SOCKET of the pair rooms (with `extra` in each join). */
async function joinedSockets(pod: Child, side: 'key' | 'wallet', extra: object): Promise<Socket[]> {
  const sockets: Socket[] = [];
  for (let first = 0; first < PAIRS; first += ROOMS_PER_SOCKET) {
    const socket = await connect(pod, side);
    sockets.push(socket);
    const rooms = Array.from({ length: Math.min(ROOMS_PER_SOCKET, PAIRS - first) }, (_, i) => first + i);
    const answers = (await Promise.all(
      rooms.map((n) => socket.timeout(60_000).emitWithAck('join', { wkIdentity: pairOf(n), ...extra })),
    )) as { ok?: boolean }[];
    const refused = answers.find((answer) => answer.ok !== true);
    if (refused) throw new Error(`join refused: ${JSON.stringify(refused)}`);
  }
  return sockets;
}

/** Stores a request to the key of each pair through `pod`, 32 at a time: their ids. */
async function storeRecords(pod: Child): Promise<{ wkIdentity: string; id: string }[]> {
  const jobs = Array.from({ length: PAIRS }, (_, n) => pairOf(n));
  const stored: { wkIdentity: string; id: string }[] = [];
  const worker = async () => {
    for (let wkIdentity = jobs.shift(); wkIdentity !== undefined; wkIdentity = jobs.shift()) {
      const res = await fetch(`${pod.url}/v1/action`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          chain: 'btc',
          wkIdentity,
          action: 'tx',
          payload: 'ab'.repeat(512),
          path: '0-0',
        }),
      });
      if (res.status !== 200) throw new Error(`POST /v1/action answered ${res.status}`);
      stored.push({ wkIdentity, id: ((await res.json()) as { data: { id: string } }).data.id });
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  return stored;
}

interface AcksResult {
  acks: number;
  recorded: number;
  refused: number;
  delivered: number;
  cpuUsPerAck: number;
  p50: number;
  p99: number;
}

async function acksPhase(bench: Bench): Promise<AcksResult> {
  const { out } = bench;
  const env = { AUTH_ROUTES: 'ack=off', SOCKET_ROOMS_MAX: String(ROOMS_PER_SOCKET) };
  const [a, b] = [
    await bench.startPod('acks-a', await freePort(), env),
    await bench.startPod('acks-b', await freePort(), env),
  ];
  const sockets: Socket[] = [];
  try {
    out(
      `acks: ${RATE}/s for ${SECONDS} s by socket on pod a, one per pair, delivered to stream sockets on pod b`,
    );
    const keys = await joinedSockets(a, 'key', {});
    const wallets = await joinedSockets(b, 'wallet', { since: { offset: 0 } });
    sockets.push(...keys, ...wallets);
    const sent = new Map<string, number>();
    const latencies: number[] = [];
    for (const wallet of wallets) {
      wallet.on('delivered', (event: { id: string }) => {
        const at = sent.get(event.id);
        if (at !== undefined) latencies.push(performance.now() - at);
      });
    }
    const records = await storeRecords(a);
    const total = records.length;
    let recorded = 0;
    let refused = 0;
    const cpuBefore = await cpuMsOf(a.process.pid!);
    await onSchedule(RATE, total, async (n) => {
      const { wkIdentity, id } = records[n]!;
      const key = keys[(Number(wkIdentity.slice(wkIdentity.lastIndexOf('-') + 1)) / ROOMS_PER_SOCKET) | 0]!;
      sent.set(id, performance.now());
      const answer = (await key.timeout(30_000).emitWithAck('ack', { wkIdentity, id })) as { ok?: boolean };
      if (answer.ok === true) recorded++;
      else refused++;
    });
    const cpuMs = (await cpuMsOf(a.process.pid!)) - cpuBefore;
    // The last events may still be on their way.
    const deadline = Date.now() + 2000;
    while (latencies.length < recorded && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const sorted = latencies.sort((x, y) => x - y);
    const result = {
      acks: total,
      recorded,
      refused,
      delivered: sorted.length,
      cpuUsPerAck: round((cpuMs * 1000) / total, 1),
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
    };
    out(
      `acks: ${result.recorded} recorded, ${result.refused} refused, ${result.delivered} delivered on pod b; ` +
        `pod a ${result.cpuUsPerAck} µs CPU per ack; ack → delivered p50 ${result.p50} ms, p99 ${result.p99} ms`,
    );
    out();
    return result;
  } finally {
    for (const socket of sockets) socket.close();
    await Promise.all([a.stop(), b.stop()]);
  }
}

export const acks: Phase<AcksResult> = {
  name: 'acks',
  key: 'acks',
  async run(bench) {
    if (bench.withAction) return acksPhase(bench);
    bench.out('acks: POST /v1/action not in this build of the relay, skipped');
    return undefined;
  },
  medians: (r) => [
    `ack pod CPU: ${r.cpuUsPerAck} µs per ack (target <= ${CPU_GOAL_US}: ${verdict(r.cpuUsPerAck <= CPU_GOAL_US)})`,
    `ack -> delivered on the other pod at ${RATE}/s: p50 ${r.p50} ms, p99 ${r.p99} ms (target <= ${LATENCY_GOAL_MS}: ${verdict(r.p99 <= LATENCY_GOAL_MS)}); ${r.delivered}/${r.recorded} delivered`,
  ],
};
