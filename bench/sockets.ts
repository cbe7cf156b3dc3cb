/**
 * The socket.io phases of `npm run bench` (docs/api.md#real-time-events). `sockets`: RSS per joined WebSocket
 * client on one pod and its idle CPU per socket, the latency from POST /v1/action to the event's receipt across two pods at a steady rate,
 * and POST /v1/action throughput with the emit against an action type the relay stores without emitting.
 * `storm`: thousands of clients connecting and joining one pod at once (a pod's share of a reconnect storm),
 * joins/s, time to 99 % and the pod's CPU per join.
 */
import { readFile } from 'node:fs/promises';
import { io, type Socket } from 'socket.io-client';
import { freePort } from '../src/core/redis/server.js';
import { cpuMsOf, memoryOf, round, type Child } from './children.js';
import { drive, median, onSchedule, percentile, type Summary } from './load.js';
import { SocketClients } from './socket-clients.js';
import type { Phase } from './phase.js';

export interface SocketsOptions {
  /** Starts one more relay pod (API role) on the benchmark's Redis with a metrics listener on `metricsPort`. */
  startPod(name: string, metricsPort: number): Promise<Child>;
  out(line?: string): void;
  /** The node arguments that run a bench source file (children.ts entryArgs). */
  nodeArgs(source: string): string[];
  clients: number;
  idleSeconds: number;
  rate: number;
  seconds: number;
  rounds: number;
  duration: number;
  connections: number;
}

const JSON_HEADERS = { 'content-type': 'application/json' };
const PADDING = 'a'.repeat(10 * 1024);
/** Same generic checks (no chain-specific payload rule), one routed to the key path and one unknown. */
const EMITTED = 'wksigningrequest';
const STORED_ONLY = 'wksigningnote';

function connect(pod: Child, side: 'key' | 'wallet', wkIdentity: string, transports?: string[]): Socket {
  const socket = io(pod.url, {
    path: `/v1/socket/${side}`,
    reconnectionAttempts: 100,
    timeout: 10000,
    ...(transports ? { transports } : {}),
  });
  socket.on('connect', () => socket.emit('join', { wkIdentity }));
  return socket;
}

/** Sum of one metric's series (whose labels match `labels`) on one pod, from its metrics listener. */
async function metricOf(metricsPort: number, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const series = new RegExp(`^${name}\\{[^}]*${labels}[^}]*\\} (\\d+)`, 'gm');
  return [...text.matchAll(series)].reduce((sum, m) => sum + Number(m[1]), 0);
}

async function until(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * RSS per joined WebSocket and idle CPU per socket: `clients` sockets held by child processes join the pod,
 * 250 at a time in flight; after a settle, the pod's CPU over `idleSeconds` of nothing but heartbeats.
 */
async function memoryPerSocket(pod: Child, options: SocketsOptions) {
  const { out, clients, idleSeconds } = options;
  const holders = SocketClients.start(
    'sockets-clients',
    SocketClients.processesFor(clients),
    options.nodeArgs,
  );
  try {
    await settle(2000);
    const before = await memoryOf(pod.process.pid!);
    const joined = await holders.connect({ url: pod.url, side: 'key', prefix: 'mem' }, clients, 250);
    await settle(5000);
    const after = await memoryOf(pod.process.pid!);
    const perSocketKb = round(((after.rssMb - before.rssMb) * 1024) / clients, 1);
    const cpuBefore = await cpuMsOf(pod.process.pid!);
    await settle(idleSeconds * 1000);
    const idleCpuMs = (await cpuMsOf(pod.process.pid!)) - cpuBefore;
    const idleUsPerSocketSecond = round((idleCpuMs * 1000) / clients / idleSeconds, 2);
    // V8 shrinks an idle heap (its memory reducer): the second figure depends less on when the last GC ran.
    const idle = await memoryOf(pod.process.pid!);
    const perSocketKbIdle = round(((idle.rssMb - before.rssMb) * 1024) / clients, 1);
    out(
      `memory: RSS ${before.rssMb} MB → ${after.rssMb} MB with ${joined.count} joined WebSocket clients ` +
        `(${joined.refused} refused): ${perSocketKb} KB per socket (goal ≤ 12); after the idle time ` +
        `${idle.rssMb} MB: ${perSocketKbIdle} KB per socket`,
    );
    out(
      `idle: the pod's CPU ${idleCpuMs} ms over ${idleSeconds} s: ${idleUsPerSocketSecond} µs/s per socket ` +
        `(goal ≤ 5)`,
    );
    await holders.close();
    return {
      clients,
      rssBeforeMb: before.rssMb,
      rssAfterMb: after.rssMb,
      perSocketKb,
      rssIdleMb: idle.rssMb,
      perSocketKbIdle,
      idleSeconds,
      idleCpuMs,
      idleUsPerSocketSecond,
    };
  } finally {
    holders.stop();
  }
}

async function latency(a: Child, b: Child, options: SocketsOptions) {
  const { out, rate, seconds } = options;
  const pairs = 200;
  const sent = new Map<string, number>();
  const latencies: number[] = [];
  const sockets = Array.from({ length: pairs }, (_, i) => {
    const socket = connect(b, 'key', `lat-${i}`, ['websocket']);
    socket.on('wksigningrequest', (record: { payload: string }) => {
      const id = record.payload.slice(0, record.payload.indexOf(':'));
      const started = sent.get(id);
      if (started !== undefined) latencies.push(performance.now() - started);
    });
    return socket;
  });
  await until('latency sockets', () => sockets.every((s) => s.connected));
  await settle(2000); // every join handled
  const total = rate * seconds;
  let failed = 0;
  await onSchedule(rate, total, async (n) => {
    const id = String(n);
    const body = JSON.stringify({
      chain: 'btc',
      wkIdentity: `lat-${n % pairs}`,
      action: 'wksigningrequest',
      payload: `${id}:${PADDING}`,
    });
    sent.set(id, performance.now());
    const res = await fetch(`${a.url}/v1/action`, { method: 'POST', headers: JSON_HEADERS, body });
    await res.arrayBuffer();
    if (res.status !== 200) failed++;
  });
  await until('the last events', () => latencies.length >= total - failed, 10_000).catch(() => undefined);
  for (const socket of sockets) socket.close();
  const sorted = [...latencies].sort((x, y) => x - y);
  const result = {
    rate,
    seconds,
    sent: total,
    failed,
    received: latencies.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: round(sorted.at(-1) ?? NaN, 2),
  };
  out(
    `latency POST (pod a) → event (pod b) at ${rate}/s for ${seconds} s: p50 ${result.p50} ms, p99 ${result.p99} ms ` +
      `(goal ≤ 50), max ${result.max} ms, ${result.received}/${total} received, ${failed} failed`,
  );
  return result;
}

type Placement = 'b' | 'a+b';

/**
 * POST /v1/action of a routed type (emitted) against an unknown type of the same size and checks (stored, never
 * emitted), with a joined key socket on the other pod only (`b`: the usual case with several pods) or on both.
 */
async function emitCost(a: Child, b: Child, placement: Placement, options: SocketsOptions) {
  const { out, rounds, duration, connections } = options;
  const room = `cost-${placement === 'b' ? 'b' : 'ab'}`;
  const pods = placement === 'b' ? [b] : [a, b];
  const listeners = pods.map((pod) => connect(pod, 'key', room, ['websocket']));
  await until('cost sockets', () => listeners.every((s) => s.connected));
  await settle(1000);
  const body = (action: string) =>
    JSON.stringify({ chain: 'btc', wkIdentity: room, action, payload: PADDING });
  const run = (action: string) =>
    drive(a.process.pid!, {
      url: `${a.url}/v1/action`,
      connections,
      duration,
      method: 'POST',
      headers: JSON_HEADERS,
      body: body(action),
    });
  const both = async (emitFirst: boolean): Promise<[Summary, Summary]> => {
    if (emitFirst) return [(await run(EMITTED)).summary, (await run(STORED_ONLY)).summary];
    const plain = (await run(STORED_ONLY)).summary;
    return [(await run(EMITTED)).summary, plain];
  };
  await both(true);
  const rows: { round: number; emit: Summary; plain: Summary; rpsRatio: number; cpuRatio: number }[] = [];
  for (let i = 1; i <= rounds; i++) {
    // Alternating the order spreads the machine's drift over both variants.
    const [emit, plain] = await both(i % 2 === 1);
    const row = {
      round: i,
      emit,
      plain,
      rpsRatio: round(emit.rps / plain.rps, 3),
      cpuRatio: round(plain.cpuUsPerRequest / emit.cpuUsPerRequest, 3),
    };
    rows.push(row);
    out(
      `round ${i} (sockets on ${placement}): emitted ${emit.rps} req/s, p99 ${emit.p99} ms, ` +
        `${emit.cpuUsPerRequest} µs CPU/req; not emitted ${plain.rps} req/s, p99 ${plain.p99} ms, ` +
        `${plain.cpuUsPerRequest} µs CPU/req; throughput ratio ${row.rpsRatio}, CPU ratio ${row.cpuRatio}`,
    );
  }
  for (const socket of listeners) socket.close();
  const rpsRatio = median(rows.map((r) => r.rpsRatio));
  const cpuRatio = median(rows.map((r) => r.cpuRatio));
  out(`sockets on ${placement}: POST throughput with the emit / without: median ${rpsRatio} (goal ≥ 0.85)`);
  out(`sockets on ${placement}: pod a's CPU per POST without / with the emit: median ${cpuRatio}`);
  return { placement, rounds: rows, rpsRatio, cpuRatio };
}

export async function socketsPhase(options: SocketsOptions) {
  const { out } = options;
  const [metricsA, metricsB] = [await freePort(), await freePort()];
  const a = await options.startPod('pod-a', metricsA);
  const b = await options.startPod('pod-b', metricsB);
  try {
    out(`sockets: two pods (a, b) on one Redis`);
    const memory = await memoryPerSocket(a, options);
    await settle(3000);
    const lat = await latency(a, b, options);
    const cost = [await emitCost(a, b, 'b', options), await emitCost(a, b, 'a+b', options)];
    out();
    return { memory, latency: lat, cost };
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
}

/** The kernel's count of connections dropped because a listen queue was full (this machine, all sockets). */
async function listenOverflows(): Promise<number> {
  const lines = (await readFile('/proc/net/netstat', 'utf8')).split('\n');
  const header = lines.findIndex((line) => line.startsWith('TcpExt:'));
  const names = lines[header]!.split(' ');
  const values = lines[header + 1]!.split(' ');
  return Number(values[names.indexOf('ListenOverflows')]);
}

export interface StormOptions {
  /** Starts one relay pod with a metrics listener on `metricsPort` and `env` over the benchmark's. */
  startPod(name: string, metricsPort: number, env?: Record<string, string>): Promise<Child>;
  /** The pod's own settings (e.g. its channel mode) and their name in the output. */
  env: Record<string, string>;
  label: string;
  /** The node arguments that run a bench source file (children.ts entryArgs). */
  nodeArgs(source: string): string[];
  out(line?: string): void;
  clients: number;
  rounds: number;
}

export interface StormRound {
  round: number;
  clients: number;
  /** From the first connect call until 99 % (and all) of the clients had joined, ms. */
  ms99: number;
  msAll: number;
  joinsPerSecond: number;
  /** The pod's CPU time (user + system) from the first connect until all had joined, per client, µs. */
  podCpuUsPerJoin: number;
  /** The client processes' CPU time over the same span, per client, µs. */
  clientCpuUsPerJoin: number;
  listenOverflows: number;
}

/**
 * A pod's share of a reconnect storm: `clients` WebSocket clients connect and join at the same moment, each to
 * its own pair, and ask for the join's acknowledgement. Time runs from the connect command to the last
 * acknowledgement, so it includes the accept queue, the handshake, the join's rate-limit consume and the mailbox
 * replay read. The clients live in child processes of their own, so the pod's CPU per join is the pod's alone
 * (on a small machine the clients still compete with the pod for the cores: joins/s depends on both).
 */
export async function stormPhase(options: StormOptions) {
  const { out, clients, rounds } = options;
  const metricsPort = await freePort();
  const pod = await options.startPod('pod-storm', metricsPort, options.env);
  const storm = SocketClients.start('storm-clients', SocketClients.processesFor(clients), options.nodeArgs);
  const results: StormRound[] = [];
  try {
    out(
      `storm (${options.label}): ${clients} WebSocket clients connecting and joining one pod at once, ${rounds} rounds after one unmeasured`,
    );
    // One round unmeasured: the pod's and the clients' code is compiled and their heaps grown before the others.
    await storm.connect({ url: pod.url, side: 'key', prefix: 'storm-warm-up' }, clients, clients);
    await storm.close();
    await until(
      'the warm-up sockets to close',
      async () => (await metricOf(metricsPort, 'relay_sockets_connected')) === 0,
    );
    await settle(1000);
    for (let round = 1; round <= rounds; round++) {
      const overflowsBefore = await listenOverflows();
      const cpuBefore = await cpuMsOf(pod.process.pid!);
      const clientCpuBefore = await storm.cpuMs();
      const joined = await storm.connect(
        { url: pod.url, side: 'key', prefix: `storm-${round}` },
        clients,
        clients,
      );
      const podCpuMs = (await cpuMsOf(pod.process.pid!)) - cpuBefore;
      const clientCpuMs = (await storm.cpuMs()) - clientCpuBefore;
      const row: StormRound = {
        round,
        clients,
        ms99: Math.round(joined.ms99),
        msAll: Math.round(joined.msAll),
        joinsPerSecond: Math.round((clients * 0.99 * 1000) / joined.ms99),
        podCpuUsPerJoin: Math.round((podCpuMs * 1000) / clients),
        clientCpuUsPerJoin: Math.round((clientCpuMs * 1000) / clients),
        listenOverflows: (await listenOverflows()) - overflowsBefore,
      };
      results.push(row);
      out(
        `round ${round}: 99 % joined in ${row.ms99} ms, all in ${row.msAll} ms: ${row.joinsPerSecond} joins/s ` +
          `(goal ≥ 5,000/s on a quiet pod); the pod's CPU ${row.podCpuUsPerJoin} µs per join (goal ≤ 150, ` +
          `${Math.round(1e6 / row.podCpuUsPerJoin)} joins per CPU-second), the clients' ${row.clientCpuUsPerJoin} µs; ` +
          `${joined.refused} refused; ` +
          `listen-queue overflows ${row.listenOverflows}`,
      );
      await storm.close();
      await until(
        'the storm sockets to close',
        async () => (await metricOf(metricsPort, 'relay_sockets_connected')) === 0,
      );
      await settle(1000);
    }
    const result = {
      clients,
      rounds: results,
      ms99: median(results.map((r) => r.ms99)),
      joinsPerSecond: median(results.map((r) => r.joinsPerSecond)),
      podCpuUsPerJoin: median(results.map((r) => r.podCpuUsPerJoin)),
    };
    out(
      `storm: median ${result.ms99} ms to 99 % joined, ${result.joinsPerSecond} joins/s; ` +
        `the pod's CPU ${result.podCpuUsPerJoin} µs per join`,
    );
    out();
    return result;
  } finally {
    storm.stop();
    await pod.stop();
  }
}

export const sockets: Phase<Awaited<ReturnType<typeof socketsPhase>>> = {
  name: 'sockets',
  key: 'sockets',
  run: ({ out, nodeArgs, args, rounds, duration, connections, startPod }) =>
    socketsPhase({
      out,
      nodeArgs,
      clients: Number(args['socket-clients']),
      idleSeconds: Number(args['socket-idle-seconds']),
      rate: Number(args['socket-rate']),
      seconds: Number(args['socket-seconds']),
      rounds,
      duration,
      connections,
      startPod,
    }),
};

// A subscription per joined room (the default) against one channel per path, subscribed once (the previous
// release's cost): what the room channels add to a join.
const STORM_MODES = [
  { label: 'a channel per room', env: { SOCKET_CHANNEL_PARTITIONS: '0' } },
  { label: 'one channel per path', env: { SOCKET_CHANNEL_PARTITIONS: '1' } },
];

type Storm = (typeof STORM_MODES)[number] & Awaited<ReturnType<typeof stormPhase>>;

export const storm: Phase<Storm[]> = {
  name: 'storm',
  key: 'storms',
  async run({ out, nodeArgs, args, rounds, startPod }) {
    const storms = [];
    for (const mode of STORM_MODES) {
      storms.push({
        ...mode,
        ...(await stormPhase({
          out,
          nodeArgs,
          clients: Number(args['storm-clients']),
          rounds,
          startPod,
          ...mode,
        })),
      });
    }
    return storms;
  },
  medians: (storms) =>
    storms.map(
      (storm) =>
        `storm of ${storm.clients} clients (${storm.label}): median ${storm.ms99} ms to 99 % joined, ` +
        `${storm.joinsPerSecond} joins/s, the pod's CPU ${storm.podCpuUsPerJoin} µs per join (goal ≤ 150)`,
    ),
};
