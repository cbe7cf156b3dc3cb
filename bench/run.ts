/**
 * `npm run bench`: the relay against a bare node:http + ioredis server on the same Redis, interleaved rounds of
 * GET /v1/sync/{id} at 64 connections, POST /v1/action with a 10 KB payload, the cost of the push intent on that
 * POST (without and with a key token registered), the cost of a routed type's event (2 KB), and of its event and
 * push intent, against storing only, and a long run for the relay's memory. Loopback only; raw results go to .bench/. See docs/benchmarks.md.
 *
 *   npm run bench -- [--duration 10] [--rounds 5] [--connections 64] [--warmup 3] [--long 60]
 *                    [--runner dist|tsx] [--phase sync-get,action-post,push,routed,routed-push,intake,verify,signed,long,
 *                    sockets,storm,fanout]
 *                    [--profile] [--relay-node-args=--flag] [--socket-clients 19000] [--socket-rate 200]
 *                    [--socket-seconds 20] [--socket-idle-seconds 50] [--signed-requests 4000] [--storm-clients 5000] [--backlog 4096]
 *
 * `verify` measures one identity verification in this process (the curve with libsecp256k1, node:crypto and
 * @noble/curves); `signed` compares POST /v1/action unsigned, signed and with a stranger's junk signature, on a
 * relay per verification path (SIGNATURE_VERIFIER=node:crypto, then libsecp256k1).
 *
 * The sockets and storm phases are not in the default set (they start more pods and thousands of clients):
 * `npm run bench -- --phase storm`. `fanout` (bench/fanout.ts) starts four pods per channel mode:
 * `npm run bench -- --phase fanout --long 0 [--fanout-before <checkout of the previous release>]`.
 *
 * `--topology sentinel,cluster` instead compares Redis topologies (test/helpers/topologies.ts, on loopback):
 * GET /v1/sync/{id} and POST /v1/action on each, as ratios to a standalone Redis measured in the same run, and
 * POST /v1/action again with REDIS_WAIT_REPLICAS=1 where there are replicas.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, startPrivateRedis } from '../src/core/redis/server.js';
import {
  compile,
  entryArgs,
  memoryOf,
  OUT_DIR,
  round,
  spawnChild,
  type Child,
  type Memory,
  type Runner,
} from './children.js';
import { drive, median, medianSummary, type Measured, type Summary } from './load.js';
import { intakePhase } from './intake.js';
import { signedPhase } from './signed.js';
import { socketsPhase, stormPhase } from './sockets.js';
import { fanoutPhase, fanoutSummary, type FanoutMode } from './fanout.js';
import { verifyFigures } from './verify.js';
import type { VerifierPath } from '../src/identity/signature.js';
import { startTopology, TOPOLOGIES, type TopologyName } from '../test/helpers/topologies.js';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '64' },
    warmup: { type: 'string', default: '3' },
    long: { type: 'string', default: '60' },
    runner: { type: 'string', default: 'dist' },
    phase: {
      type: 'string',
      default: 'sync-get,action-post,push,routed,routed-push,intake,verify,signed,long',
    },
    'signed-requests': { type: 'string', default: '4000' },
    'relay-node-args': { type: 'string', default: '' },
    profile: { type: 'boolean', default: false },
    'socket-clients': { type: 'string', default: '19000' },
    'socket-idle-seconds': { type: 'string', default: '50' },
    'socket-rate': { type: 'string', default: '200' },
    'socket-seconds': { type: 'string', default: '20' },
    'storm-clients': { type: 'string', default: '5000' },
    'fanout-pairs': { type: 'string', default: '300' },
    'fanout-rates': { type: 'string', default: '500,1000,2000' },
    'fanout-seconds': { type: 'string', default: '10' },
    'fanout-partitions': { type: 'string', default: '64' },
    // A checkout of another release (its dependencies installed) whose pods the fanout phase measures too.
    'fanout-before': { type: 'string' },
    // HTTP_BACKLOG of every relay pod (unset: the relay's default), to compare accept queues in the storm.
    backlog: { type: 'string' },
    topology: { type: 'string' },
  },
});
const duration = Number(args.duration);
const rounds = Number(args.rounds);
const connections = Number(args.connections);
const warmup = Number(args.warmup);
const longSeconds = Number(args.long);
const runner = args.runner as Runner;
if (runner !== 'dist' && runner !== 'tsx') throw new Error('--runner must be dist or tsx');
const PHASES = [
  'sync-get',
  'action-post',
  'push',
  'routed',
  'routed-push',
  'intake',
  'verify',
  'signed',
  'long',
  'sockets',
  'storm',
  'fanout',
];
const phases = new Set(args.phase.split(','));
const unknownPhases = [...phases].filter((phase) => !PHASES.includes(phase));
if (unknownPhases.length > 0)
  throw new Error(`--phase takes ${PHASES.join(', ')} (got ${unknownPhases.join(', ')})`);
// Extra node flags for the relay only, e.g. --relay-node-args=--max-semi-space-size=4 (V8 heap tuning).
const relayNodeArgs = args['relay-node-args'].split(' ').filter(Boolean);

const out = (line = '') => process.stdout.write(line + '\n');

// A realistic pairing record (docs/api.md#post-v1sync): a 111-char xpub and a 62-char bc1q multisig address.
const WALLET_ID = 'bench-wallet-7f3a9c2e41d84b6f';
const SYNC_RECORD = {
  chain: 'btc',
  walletIdentity: WALLET_ID,
  keyXpub:
    'xpub6' +
    'D4BDPcP2GT577Vvch3R8wDkScZWzQzMMUm3PWbmWvVJrZwQY4VUNgqFJPMM3No2dFDFGTsxxpG5uJh7n7epu4trkrX7x7D'.padEnd(
      106,
      'q',
    ),
  wkIdentity: 'bc1q' + 'x'.repeat(58),
  generatedAddress: 'bc1q' + 'ar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq'.slice(0, 38),
};
// A 10 KB signing request: a `tx` on a UTXO chain carries a hex payload and a derivation path.
const ACTION_BODY = JSON.stringify({
  chain: 'btc',
  wkIdentity: SYNC_RECORD.wkIdentity,
  action: 'tx',
  payload: '0a'.repeat(5 * 1024),
  path: '0-0',
});
// The same request under a type the action table does not route: stored and answered alike, but no push job.
const UNROUTED_BODY = JSON.stringify({ ...(JSON.parse(ACTION_BODY) as object), action: 'benchnote' });
const JSON_HEADERS = { 'content-type': 'application/json' };

async function seedSync(relay: Child): Promise<void> {
  // Re-seeded before every run: the first read cuts the record's lifetime to the read grace (120 s).
  const res = await fetch(`${relay.url}/v1/sync`, {
    method: 'POST',
    headers: JSON_HEADERS,
    body: JSON.stringify(SYNC_RECORD),
  });
  if (res.status !== 200)
    throw new Error(`seeding POST /v1/sync answered ${res.status}: ${await res.text()}`);
}

/** Both servers must answer the same data before their speed means anything. */
async function checkSameAnswer(relay: Child, bare: Child): Promise<void> {
  const answer = (c: Child) => fetch(`${c.url}/v1/sync/${WALLET_ID}`).then((r) => r.text());
  const [a, b] = await Promise.all([answer(relay), answer(bare)]);
  const expected = JSON.stringify({ success: true, data: SYNC_RECORD });
  if (a !== expected || b !== expected) {
    throw new Error(`relay and bare answer differently: ${a} vs ${b}`);
  }
}

async function actionAvailable(relay: Child): Promise<boolean> {
  const res = await fetch(`${relay.url}/v1/action`, {
    method: 'POST',
    headers: JSON_HEADERS,
    body: ACTION_BODY,
  });
  if (res.status === 200) return true;
  if (res.status === 404 || res.status === 405) return false;
  throw new Error(`POST /v1/action answered ${res.status}: ${await res.text()}`);
}

const getSync = (target: Child, seconds: number) =>
  drive(target.process.pid!, { url: `${target.url}/v1/sync/${WALLET_ID}`, connections, duration: seconds });
const postAction = (target: Child, seconds: number, conns = connections, body = ACTION_BODY) =>
  drive(target.process.pid!, {
    url: `${target.url}/v1/action`,
    connections: conns,
    duration: seconds,
    method: 'POST',
    headers: JSON_HEADERS,
    body,
  });

interface GetRound {
  round: number;
  relay: Summary;
  bare: Summary;
  rpsRatio: number;
  p99Ratio: number;
  cpuRatio: number;
}

const fmt = (s: Summary) =>
  `${String(s.rps).padStart(8)} ${String(s.p50).padStart(7)} ${String(s.p99).padStart(7)}` +
  ` ${String(s.non2xx + s.errors).padStart(6)} ${String(s.cpuUsPerRequest).padStart(8)}`;
const HEADER =
  `${'run'.padEnd(22)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)}` +
  ` ${'fail'.padStart(6)} ${'cpu µs/req'.padStart(8)}`;

async function getRounds(
  relay: Child,
  bare: Child,
  raw: Record<string, Measured['raw'][]>,
): Promise<GetRound[]> {
  out(`GET /v1/sync/{id}: ${rounds} interleaved rounds of ${duration} s, ${connections} connections`);
  for (const target of [relay, bare]) {
    await seedSync(relay);
    await getSync(target, warmup);
  }
  out(HEADER + ['rps ratio', 'p99 ratio', 'cpu ratio'].map((h) => h.padStart(10)).join(''));
  const results: GetRound[] = [];
  for (let i = 1; i <= rounds; i++) {
    await seedSync(relay);
    const r = await getSync(relay, duration);
    await seedSync(relay);
    const b = await getSync(bare, duration);
    (raw.getRelay ??= []).push(r.raw);
    (raw.getBare ??= []).push(b.raw);
    const row: GetRound = {
      round: i,
      relay: r.summary,
      bare: b.summary,
      rpsRatio: round(r.summary.rps / b.summary.rps, 2),
      p99Ratio: round(r.summary.p99 / b.summary.p99, 2),
      cpuRatio: round(r.summary.cpuUsPerRequest / b.summary.cpuUsPerRequest, 2),
    };
    results.push(row);
    out(`${`round ${i} relay`.padEnd(22)} ${fmt(r.summary)}`);
    out(
      `${`round ${i} bare`.padEnd(22)} ${fmt(b.summary)}${[row.rpsRatio, row.p99Ratio, row.cpuRatio].map((v) => String(v).padStart(10)).join('')}`,
    );
  }
  return results;
}

async function getPhase(relay: Child, bare: Child, raw: Record<string, Measured['raw'][]>) {
  const rounds = await getRounds(relay, bare, raw);
  out();
  return {
    rounds,
    medians: {
      relay: medianSummary(rounds.map((r) => r.relay)),
      bare: medianSummary(rounds.map((r) => r.bare)),
      rpsRatio: median(rounds.map((r) => r.rpsRatio)),
      p99Ratio: median(rounds.map((r) => r.p99Ratio)),
      cpuRatio: median(rounds.map((r) => r.cpuRatio)),
    },
  };
}

async function postRounds(relay: Child, raw: Record<string, Measured['raw'][]>): Promise<Summary[]> {
  out(`POST /v1/action (10 KB payload): ${rounds} rounds of ${duration} s, ${connections} connections`);
  await postAction(relay, warmup);
  out(HEADER + '    RSS MB');
  const results: Summary[] = [];
  for (let i = 1; i <= rounds; i++) {
    const r = await postAction(relay, duration);
    (raw.postRelay ??= []).push(r.raw);
    results.push(r.summary);
    const { rssMb } = await memoryOf(relay.process.pid!);
    out(`${`round ${i} relay`.padEnd(22)} ${fmt(r.summary)}${String(rssMb).padStart(10)}`);
  }
  return results;
}

/** One round of two POST /v1/action bodies on the same relay: `with` the cost measured, `without` it. */
interface PairedRound {
  round: number;
  with: Summary;
  without: Summary;
  rpsRatio: number;
  cpuRatio: number;
}

interface Paired {
  title: string;
  /** Raw-result keys and row labels of the two bodies. */
  names: { with: string; without: string };
  bodies: { with: string; without: string };
}

/**
 * Two bodies alternately, alternating which goes first so drift cancels out: the ratio is the share of what
 * the first body costs beyond the second.
 */
async function pairedRounds(
  relay: Child,
  raw: Record<string, Measured['raw'][]>,
  paired: Paired,
): Promise<{ rounds: PairedRound[]; rpsRatio: number; cpuRatio: number }> {
  out(`${paired.title}: ${rounds} interleaved rounds of ${duration} s`);
  await postAction(relay, warmup, connections, paired.bodies.with);
  await postAction(relay, warmup, connections, paired.bodies.without);
  out(HEADER + ['rps ratio', 'cpu ratio'].map((h) => h.padStart(10)).join(''));
  const results: PairedRound[] = [];
  for (let i = 1; i <= rounds; i++) {
    const run = (body: string) => postAction(relay, duration, connections, body);
    let measured: Measured;
    let baseline: Measured;
    if (i % 2) {
      measured = await run(paired.bodies.with);
      baseline = await run(paired.bodies.without);
    } else {
      baseline = await run(paired.bodies.without);
      measured = await run(paired.bodies.with);
    }
    (raw[paired.names.with] ??= []).push(measured.raw);
    (raw[paired.names.without] ??= []).push(baseline.raw);
    const row: PairedRound = {
      round: i,
      with: measured.summary,
      without: baseline.summary,
      rpsRatio: round(measured.summary.rps / baseline.summary.rps, 2),
      cpuRatio: round(measured.summary.cpuUsPerRequest / baseline.summary.cpuUsPerRequest, 2),
    };
    results.push(row);
    out(`${`round ${i} ${paired.names.without}`.padEnd(22)} ${fmt(row.without)}`);
    out(
      `${`round ${i} ${paired.names.with}`.padEnd(22)} ${fmt(row.with)}${[row.rpsRatio, row.cpuRatio].map((v) => String(v).padStart(10)).join('')}`,
    );
  }
  return {
    rounds: results,
    rpsRatio: median(results.map((r) => r.rpsRatio)),
    cpuRatio: median(results.map((r) => r.cpuRatio)),
  };
}

/**
 * The push's share of POST /v1/action: a routed type (`tx`: stored, its event emitted, its push intent appended)
 * against an unrouted one (stored only). The benchmark runs no worker: intents wait in their stream (trimmed to an
 * action's lifetime), as jobs did when the API queued them.
 */
const PUSH_PAIR: Paired = {
  title: 'POST /v1/action with and without the event and push intent',
  names: { with: 'postPush', without: 'postNoPush' },
  bodies: { with: ACTION_BODY, without: UNROUTED_BODY },
};

/** The pair of the routed-push phase, whose key side has a token registered (see registerKeyToken). */
const TOKEN_PAIR_ID = 'bc1q' + 't'.repeat(58);

async function registerKeyToken(relay: Child): Promise<void> {
  const res = await fetch(`${relay.url}/v1/token`, {
    method: 'POST',
    headers: JSON_HEADERS,
    body: JSON.stringify({ wkIdentity: TOKEN_PAIR_ID, keyToken: 'bench-fcm-device-token' }),
  });
  if (res.status !== 200) throw new Error(`POST /v1/token answered ${res.status}: ${await res.text()}`);
}

/**
 * The delivery guarantee's share of POST /v1/action: a 2 KB request of a type routed to the key sockets but
 * never pushed (an ACTION_TYPES_EXTRA row of the benchmark's relay), whose cross-pod notice carries the record,
 * against the same request under an unrouted type (stored only).
 */
const ROUTED_PAIR: Paired = {
  title: 'POST /v1/action 2 KB routed (event with the record) and stored only',
  names: { with: 'routed', without: 'storedOnly' },
  bodies: {
    with: JSON.stringify({
      ...(JSON.parse(ACTION_BODY) as object),
      action: 'benchrouted',
      payload: '0a'.repeat(1024),
    }),
    without: JSON.stringify({
      ...(JSON.parse(ACTION_BODY) as object),
      action: 'benchnote',
      payload: '0a'.repeat(1024),
    }),
  },
};

/**
 * The issue's delivery goal: ROUTED_PAIR's 2 KB request under a type that is also pushed (its event and its push
 * job), for the pair whose key side has a token, against the same request stored only.
 */
const ROUTED_PUSH_PAIR: Paired = {
  title: 'POST /v1/action 2 KB routed and pushed (event and push intent) and stored only',
  names: { with: 'routedPushed', without: 'storedOnlyTokens' },
  bodies: {
    with: JSON.stringify({
      ...(JSON.parse(ROUTED_PAIR.bodies.with) as object),
      action: 'benchpushed',
      wkIdentity: TOKEN_PAIR_ID,
    }),
    without: JSON.stringify({
      ...(JSON.parse(ROUTED_PAIR.bodies.without) as object),
      wkIdentity: TOKEN_PAIR_ID,
    }),
  },
};

interface LongRun {
  seconds: number;
  idle: Memory;
  samples: { atSeconds: number; rssMb: number }[];
  after: Memory;
  get: Summary;
  post?: Summary;
}

/** The relay under sustained load (GET, plus a few POST /v1/action connections when it has them). */
async function longRun(relay: Child, withAction: boolean, idle: Memory): Promise<LongRun> {
  const postConnections = withAction ? Math.max(1, Math.round(connections / 8)) : 0;
  out(
    `long run: ${longSeconds} s, GET at ${connections - postConnections} connections` +
      (withAction ? ` + POST /v1/action at ${postConnections}` : ''),
  );
  await seedSync(relay);
  const samples: LongRun['samples'] = [];
  const started = Date.now();
  const sampler = setInterval(() => {
    void memoryOf(relay.process.pid!).then((m) =>
      samples.push({ atSeconds: Math.round((Date.now() - started) / 1000), rssMb: m.rssMb }),
    );
  }, 10_000);
  const [get, post] = await Promise.all([
    drive(relay.process.pid!, {
      url: `${relay.url}/v1/sync/${WALLET_ID}`,
      connections: connections - postConnections,
      duration: longSeconds,
    }),
    withAction ? postAction(relay, longSeconds, postConnections) : undefined,
  ]);
  clearInterval(sampler);
  const after = await memoryOf(relay.process.pid!);
  out(`relay RSS: ${idle.rssMb} MB idle, ${after.rssMb} MB after the run (peak ${after.peakMb} MB)`);
  return {
    seconds: longSeconds,
    idle,
    samples,
    after,
    get: get.summary,
    ...(post ? { post: post.summary } : {}),
  };
}

function machine() {
  const cpu = cpus();
  const redis = spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout.trim();
  return {
    cpu: cpu[0]?.model ?? 'unknown',
    cores: cpu.length,
    memoryGb: round(totalmem() / 2 ** 30),
    node: process.version,
    redis,
  };
}

const RELAY_ENV = {
  RELAY_ROLE: 'api',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  // The Redis limiter stays on (its round trip is part of every /v1 request); the budget only never runs out.
  RATE_LIMIT_POINTS: '1000000',
  // Likewise the byte budget of writes: every POST still pays its round trip, none is refused.
  WRITE_BUDGET_BYTES: String(1024 ** 4),
  // Every benchmark client connects from 127.0.0.1, and the POSTs go to one pair.
  SOCKETS_PER_IP: '1000000',
  // 64 connections from one address would otherwise queue behind its 8 answer slots: the cap, meant for one
  // client that never reads, would throttle the benchmark's whole load instead of measuring the relay.
  HTTP_ANSWERS_PER_IP: '1000000',
  SOCKET_HANDSHAKES_PER_MINUTE: '1000000',
  PUSH_PER_PAIR_PER_MINUTE: '1000000',
  TOKEN_REGISTRATIONS_PER_HOUR: '1000000',
  ...(args.backlog ? { HTTP_BACKLOG: args.backlog } : {}),
  // The routed phase's type: emitted to the key sockets (the notice with the record), never pushed.
  ACTION_TYPES_EXTRA: JSON.stringify([
    { type: 'benchrouted', to: 'key', replay: true, push: null },
    { type: 'benchpushed', to: 'key', replay: true, push: { title: 'Benchmark', body: 'Benchmark request' } },
  ]),
};

async function main(): Promise<void> {
  mkdirSync(OUT_DIR, { recursive: true });
  const compileMs = runner === 'dist' ? compile() : undefined;
  const redis = await startPrivateRedis();
  const [relayPort, barePort] = [await freePort(), await freePort()];
  const profileArgs = args.profile ? ['--cpu-prof', `--cpu-prof-dir=${join(OUT_DIR, 'profiles')}`] : [];
  const relay = await spawnChild({
    name: 'relay',
    nodeArgs: [...profileArgs, ...relayNodeArgs, ...entryArgs(runner, 'src/main.ts')],
    env: {
      PORT: String(relayPort),
      REDIS_URL: redis.url,
      ...RELAY_ENV,
      METRICS_PORT: '0',
    },
    port: relayPort,
    readyPath: '/readyz',
  });
  const bare = await spawnChild({
    name: 'bare',
    nodeArgs: entryArgs(runner, 'bench/bare-server.ts'),
    env: { PORT: String(barePort), REDIS_URL: redis.url },
    port: barePort,
    readyPath: '/healthz',
  });
  out(
    `relay (${runner}) ready in ${relay.readyMs} ms, bare in ${bare.readyMs} ms` +
      (compileMs !== undefined ? `, compiled in ${compileMs} ms` : ''),
  );

  await seedSync(relay);
  await checkSameAnswer(relay, bare);
  const withAction = await actionAvailable(relay);
  const idle = await memoryOf(relay.process.pid!);

  const raw: Record<string, Measured['raw'][]> = {};
  const get = phases.has('sync-get') ? await getPhase(relay, bare, raw) : undefined;
  let post: { rounds: Summary[]; median: Summary } | undefined;
  if (phases.has('action-post') && !withAction)
    out('POST /v1/action: not in this build of the relay (404), skipped');
  if (phases.has('action-post') && withAction) {
    const postResults = await postRounds(relay, raw);
    post = { rounds: postResults, median: medianSummary(postResults) };
    out();
  }
  const push = phases.has('push') && withAction ? await pairedRounds(relay, raw, PUSH_PAIR) : undefined;
  if (push) out();
  const routed = phases.has('routed') && withAction ? await pairedRounds(relay, raw, ROUTED_PAIR) : undefined;
  if (routed) out();
  if (phases.has('routed-push') && withAction) await registerKeyToken(relay);
  const routedPush =
    phases.has('routed-push') && withAction ? await pairedRounds(relay, raw, ROUTED_PUSH_PAIR) : undefined;
  if (routedPush) out();
  const intake = phases.has('intake') ? await intakePhase(redis.url, rounds) : undefined;
  if (intake) {
    out(
      `a push job's making, µs of CPU (median of ${rounds} rounds of ${intake.intents}, in the benchmark process):`,
    );
    out(`  Queue.add per job (the API's share before push intents) ${intake.addUs}`);
    out(`  the worker's intake per intent                          ${intake.intakeUs}`);
    out();
  }
  let verify: ReturnType<typeof verifyFigures> | undefined;
  if (phases.has('verify')) {
    verify = verifyFigures();
    out('one identity verification, µs of CPU (median of batches, in the benchmark process):');
    for (const [name, us] of Object.entries(verify)) out(`  ${name.padEnd(26)} ${us}`);
    out();
  }
  // More relay pods (API role) on the benchmark's Redis, each with a metrics listener, for the socket phases.
  const startPod = async (name: string, metricsPort: number, env: Record<string, string> = {}) => {
    const port = await freePort();
    return spawnChild({
      name,
      nodeArgs: [...profileArgs, ...relayNodeArgs, ...entryArgs(runner, 'src/main.ts')],
      env: {
        ...RELAY_ENV,
        ...env,
        PORT: String(port),
        REDIS_URL: redis.url,
        METRICS_PORT: String(metricsPort),
      },
      port,
      readyPath: '/readyz',
    });
  };
  // The signed phase once per verification path, each on a relay of its own that was told which to take.
  const signed: Partial<Record<VerifierPath, Awaited<ReturnType<typeof signedPhase>>>> = {};
  const verifierPaths: VerifierPath[] = ['node:crypto', 'libsecp256k1'];
  for (const path of phases.has('signed') && withAction ? verifierPaths : []) {
    const pod = await startPod(`relay-${path.replace(':', '-')}`, 0, { SIGNATURE_VERIFIER: path });
    try {
      out(`SIGNATURE_VERIFIER=${path}`);
      signed[path] = await signedPhase(pod, {
        rounds,
        connections,
        requests: Number(args['signed-requests']),
        out,
        header: HEADER,
        fmt,
      });
    } finally {
      await pod.stop();
    }
    out();
  }
  const long = phases.has('long') && longSeconds > 0 ? await longRun(relay, withAction, idle) : undefined;
  const nodeArgs = (source: string) => entryArgs(runner, source);
  const sockets = phases.has('sockets')
    ? await socketsPhase({
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
      })
    : undefined;
  // A subscription per joined room (the default) against one channel per path, subscribed once (the previous
  // release's cost): what the room channels add to a join.
  const stormModes = [
    { label: 'a channel per room', env: { SOCKET_CHANNEL_PARTITIONS: '0' } },
    { label: 'one channel per path', env: { SOCKET_CHANNEL_PARTITIONS: '1' } },
  ];
  const storms = [];
  for (const mode of phases.has('storm') ? stormModes : []) {
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
  const relayArgs = [...profileArgs, ...relayNodeArgs, ...entryArgs(runner, 'src/main.ts')];
  const before = args['fanout-before'];
  const fanoutModes: FanoutMode[] = [
    ...(before ? [{ name: 'before', nodeArgs: ['--import=tsx', join(before, 'src/main.ts')], env: {} }] : []),
    { name: 'room', nodeArgs: relayArgs, env: { SOCKET_CHANNEL_PARTITIONS: '0' } },
    {
      name: `partitions=${args['fanout-partitions']}`,
      nodeArgs: relayArgs,
      env: { SOCKET_CHANNEL_PARTITIONS: args['fanout-partitions'] },
    },
  ];
  const fanout = phases.has('fanout')
    ? await fanoutPhase({
        modes: fanoutModes,
        env: { ...RELAY_ENV, REDIS_URL: redis.url },
        pairs: Number(args['fanout-pairs']),
        rates: args['fanout-rates'].split(',').map(Number),
        seconds: Number(args['fanout-seconds']),
        out,
      })
    : undefined;
  out();
  out('medians');
  out(HEADER);
  for (const line of fanout ? fanoutSummary(fanout) : []) out(line);
  const verdict = (okay: boolean) => (okay ? 'met' : 'MISSED');
  if (get) {
    const m = get.medians;
    out(`${'GET relay'.padEnd(22)} ${fmt(m.relay)}`);
    out(`${'GET bare'.padEnd(22)} ${fmt(m.bare)}`);
    out(`GET throughput relay/bare: median ${m.rpsRatio} (target >= 0.6: ${verdict(m.rpsRatio >= 0.6)})`);
    out(`GET p99 relay/bare:        median ${m.p99Ratio} (target <= 2: ${verdict(m.p99Ratio <= 2)})`);
    out(`GET CPU per request relay/bare: median ${m.cpuRatio}`);
  }
  if (post) out(`${'POST /v1/action relay'.padEnd(22)} ${fmt(post.median)}`);
  if (push) {
    out(`POST /v1/action throughput with/without the event and push intent: median ${push.rpsRatio}`);
    out(`POST /v1/action CPU per request with/without the event and push intent: median ${push.cpuRatio}`);
  }
  if (routed) {
    out(`POST /v1/action 2 KB throughput routed/stored only: median ${routed.rpsRatio}`);
    out(`POST /v1/action 2 KB CPU per request routed/stored only: median ${routed.cpuRatio}`);
  }
  if (routedPush) {
    out(`POST /v1/action 2 KB throughput routed and pushed/stored only: median ${routedPush.rpsRatio}`);
    out(`POST /v1/action 2 KB CPU per request routed and pushed/stored only: median ${routedPush.cpuRatio}`);
  }
  for (const [path, result] of Object.entries(signed)) {
    out(
      `POST /v1/action CPU per request signed/unsigned, ${path}: median ${result.signedCpuRatio} (target <= 1.5: ${verdict(result.signedCpuRatio <= 1.5)})`,
    );
    out(`POST /v1/action throughput signed/unsigned, ${path}: median ${result.signedRpsRatio}`);
    out(`POST /v1/action CPU per request junk signature/unsigned, ${path}: median ${result.junkCpuRatio}`);
  }
  for (const storm of storms) {
    out(
      `storm of ${storm.clients} clients (${storm.label}): median ${storm.ms99} ms to 99 % joined, ` +
        `${storm.joinsPerSecond} joins/s, the pod's CPU ${storm.podCpuUsPerJoin} µs per join (goal ≤ 150)`,
    );
  }
  if (long) {
    out(
      `relay RSS after ${long.seconds} s: ${long.after.rssMb} MB (target < 150: ${verdict(long.after.rssMb < 150)})`,
    );
  }

  await Promise.all([relay.stop(), bare.stop()]);
  await redis.stop();
  const file = join(OUT_DIR, `results-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  const options = {
    duration,
    rounds,
    connections,
    warmup,
    long: longSeconds,
    runner,
    phases: [...phases],
    profile: args.profile,
    relayNodeArgs,
  };

  writeFileSync(
    file,
    JSON.stringify(
      {
        machine: machine(),
        options,
        startup: { relayReadyMs: relay.readyMs, bareReadyMs: bare.readyMs, compileMs },
        get,
        post,
        push,
        routed,
        routedPush,
        intake,
        verify,
        signed,
        long,
        sockets,
        storms,
        fanout,
        raw,
      },
      null,
      2,
    ),
  );
  out(`raw results: ${file}`);
}

/** One relay (API role) on `redisEnv`, measured with GET rounds and POST rounds; medians of each. */
async function measureRelay(label: string, redisEnv: Record<string, string>) {
  const port = await freePort();
  const relay = await spawnChild({
    name: `relay-${label}`,
    nodeArgs: entryArgs(runner, 'src/main.ts'),
    env: { ...RELAY_ENV, ...redisEnv, PORT: String(port) },
    port,
    readyPath: '/readyz',
  });
  try {
    await seedSync(relay);
    await getSync(relay, warmup);
    const gets: Summary[] = [];
    const posts: Summary[] = [];
    for (let i = 0; i < rounds; i++) {
      await seedSync(relay);
      gets.push((await getSync(relay, duration)).summary);
      posts.push((await postAction(relay, duration)).summary);
    }
    const result = { get: medianSummary(gets), post: medianSummary(posts) };
    out(`${`GET  ${label}`.padEnd(22)} ${fmt(result.get)}`);
    out(`${`POST ${label}`.padEnd(22)} ${fmt(result.post)}`);
    return result;
  } finally {
    await relay.stop();
  }
}

async function topologyMain(names: TopologyName[]): Promise<void> {
  mkdirSync(OUT_DIR, { recursive: true });
  if (runner === 'dist') compile();
  out(`topologies: ${rounds} rounds of ${duration} s per endpoint, ${connections} connections`);
  out(HEADER);
  const redis = await startPrivateRedis();
  const results: Record<string, Awaited<ReturnType<typeof measureRelay>>> = {};
  for (const name of ['standalone' as const, ...names.filter((n) => n !== 'standalone')]) {
    const topology = await startTopology(name, redis);
    try {
      results[name] = await measureRelay(name, { ...topology.env, REDIS_WAIT_REPLICAS: '0' });
      if (name !== 'standalone') {
        results[`${name}+wait1`] = await measureRelay(`${name} WAIT 1`, {
          ...topology.env,
          REDIS_WAIT_REPLICAS: '1',
        });
      }
    } finally {
      await topology.stop();
    }
  }
  await redis.stop();
  const base = results.standalone!;
  const ratio = (a: number, b: number) => round(a / b, 2);
  out();
  out(
    `${'ratios to standalone'.padEnd(22)} ${['GET rps', 'GET p99', 'POST rps', 'POST p50', 'POST p99'].map((h) => h.padStart(9)).join('')}`,
  );
  for (const [label, r] of Object.entries(results)) {
    const cells = [
      ratio(r.get.rps, base.get.rps),
      ratio(r.get.p99, base.get.p99),
      ratio(r.post.rps, base.post.rps),
      ratio(r.post.p50, base.post.p50),
      ratio(r.post.p99, base.post.p99),
    ];
    out(`${label.padEnd(22)} ${cells.map((c) => String(c).padStart(9)).join('')}`);
  }
  const file = join(OUT_DIR, `topologies-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      { machine: machine(), options: { duration, rounds, connections, warmup, runner }, results },
      null,
      2,
    ),
  );
  out(`raw results: ${file}`);
}

if (args.topology === undefined) {
  await main();
} else {
  const names = args.topology.split(',') as TopologyName[];
  const unknown = names.filter((name) => !TOPOLOGIES.includes(name));
  if (unknown.length > 0)
    throw new Error(`--topology takes ${TOPOLOGIES.join(', ')} (got ${unknown.join(', ')})`);
  await topologyMain(names);
  process.exit(0);
}
