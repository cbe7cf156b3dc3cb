/**
 * `acks` phase of `npm run bench` (docs/api.md#acks-and-receipts): two more API pods with `AUTH_ROUTES=ack=off`
 * (so a plain join may ack: the cost measured is the ack's, not a join signature's). The records to acknowledge
 * are stored first, spread over pairs (each stream keeps STREAM_LENGTH of them); one key socket on pod a, joined
 * to every pair room, acknowledges them by socket at a steady rate, and a wallet stream socket per pair on pod b
 * receives the `delivered` events. Figures: pod a's CPU per ack (goal ≤ 40 µs) and the ack → `delivered` on pod b
 * latency p50/p99 (goal p99 ≤ 100 ms at 1,000 acks/s).
 */
import { io, type Socket } from 'socket.io-client';
import { cpuMsOf, round, type Child } from './children.js';
import { onSchedule, percentile } from './load.js';
import { verdict, type Bench, type Phase } from './phase.js';
import { freePort } from '../src/core/redis/server.js';

const RATE = 1000;
const SECONDS = 10;
const PAIRS = 50;
const PER_PAIR = 200;
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

async function join(socket: Socket, data: object): Promise<void> {
  const answer = (await socket.timeout(10_000).emitWithAck('join', data)) as { ok?: boolean };
  if (answer.ok !== true) throw new Error(`join refused: ${JSON.stringify(answer)}`);
}

/** Stores `PER_PAIR` requests to the key of each pair through `pod`, 32 at a time: their ids, interleaved by pair. */
async function storeRecords(pod: Child): Promise<{ wkIdentity: string; id: string }[]> {
  const jobs = Array.from({ length: PAIRS * PER_PAIR }, (_, n) => pairOf(n % PAIRS));
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
  const env = {
    AUTH_ROUTES: 'ack=off',
    STREAM_LENGTH: String(PER_PAIR),
    SOCKET_ROOMS_MAX: String(PAIRS),
  };
  const [a, b] = [
    await bench.startPod('acks-a', await freePort(), env),
    await bench.startPod('acks-b', await freePort(), env),
  ];
  const sockets: Socket[] = [];
  try {
    out(
      `acks: ${RATE}/s for ${SECONDS} s by socket on pod a, delivered to a wallet stream socket per pair on pod b`,
    );
    const key = await connect(a, 'key');
    sockets.push(key);
    for (let n = 0; n < PAIRS; n++) await join(key, { wkIdentity: pairOf(n) });
    const sent = new Map<string, number>();
    const latencies: number[] = [];
    for (let n = 0; n < PAIRS; n++) {
      const wallet = await connect(b, 'wallet');
      sockets.push(wallet);
      await join(wallet, { wkIdentity: pairOf(n), since: { offset: 0 } });
      wallet.on('delivered', (event: { id: string }) => {
        const at = sent.get(event.id);
        if (at !== undefined) latencies.push(performance.now() - at);
      });
    }
    const records = await storeRecords(a);
    const total = Math.min(records.length, RATE * SECONDS);
    let recorded = 0;
    let refused = 0;
    const cpuBefore = await cpuMsOf(a.process.pid!);
    await onSchedule(RATE, total, async (n) => {
      const { wkIdentity, id } = records[n]!;
      sent.set(id, performance.now());
      const answer = (await key.timeout(10_000).emitWithAck('ack', { wkIdentity, id })) as { ok?: boolean };
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
