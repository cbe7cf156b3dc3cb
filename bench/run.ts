/**
 * `npm run bench`: the relay against a bare node:http + ioredis server on the same Redis, interleaved rounds of
 * GET /v1/sync/{id} at 64 connections, the plain action poll answered 304 against 200 and the bare read,
 * POST /v1/action with a 10 KB payload, the cost of the push intent on that
 * POST (without and with a key token registered), the cost of a routed type's event (2 KB), and of its event and
 * push intent, against storing only, and a long run for the relay's memory. Loopback only; raw results go to .bench/. See docs/benchmarks.md.
 *
 *   npm run bench -- [--duration 10] [--rounds 5] [--connections 64] [--warmup 3] [--long 60]
 *                    [--runner dist|tsx] [--phase sync-get,not-modified,action-post,push,routed,routed-push,intake,push-grace,verify,signed,
 *                    session,acks,longpoll,long,
 *                    sockets,storm,fanout]
 *                    [--profile] [--relay-node-args=--flag] [--socket-clients 19000] [--socket-rate 200]
 *                    [--socket-seconds 20] [--socket-idle-seconds 50] [--signed-requests 4000] [--storm-clients 5000] [--backlog 4096]
 *                    [--longpoll-before <checkout>] [--longpoll-pairs 1000]
 *
 * `push-grace` (bench/push-grace.ts) counts FCM messages per request to a key app that acks on an authenticated stream
 * socket, with and without PUSH_ACK_GRACE_MS, through a worker in this process and the tests' fake FCM.
 * `acks` (bench/acks.ts) starts two more pods and measures an ack's CPU on its pod and the `delivered` event's
 * latency on the other one.
 *
 * `verify` measures one identity verification in this process (the curve with libsecp256k1, node:crypto and
 * @noble/curves); `signed` compares POST /v1/action unsigned, signed and with a stranger's junk signature, on a
 * relay per verification path (SIGNATURE_VERIFIER=node:crypto, then libsecp256k1). `session` (bench/session.ts)
 * measures one token check, GET /v1/action with a token against without, a write carrying a token against
 * unsigned and signed ones, and the relay's CPU per exchange, on a pod with SESSION_KEYS.
 *
 * The sockets and storm phases are not in the default set (they start more pods and thousands of clients):
 * `npm run bench -- --phase storm`. `fanout` (bench/fanout.ts) starts four pods per channel mode:
 * `npm run bench -- --phase fanout --long 0 [--fanout-before <checkout of the previous release>]`.
 *
 * Each phase is a module with one shape (bench/phase.ts): it runs against the benchmark's relay, bare server and
 * Redis, prints its rounds, and gives its figures for the results file and its lines under "medians".
 *
 * `--topology sentinel,cluster` instead compares Redis topologies (bench/topologies.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, startPrivateRedis } from '../src/core/redis/server.js';
import { compile, entryArgs, memoryOf, OUT_DIR, spawnChild, type Runner } from './children.js';
import { acks } from './acks.js';
import { actionPost } from './action-post.js';
import { fanout } from './fanout.js';
import { intake } from './intake.js';
import { long } from './long.js';
import { longPoll } from './longpoll.js';
import { notModified } from './not-modified.js';
import { push, routed, routedPush } from './paired.js';
import { pushGrace } from './push-grace.js';
import { HEADER, machine, OPTIONS, type Bench, type Phase } from './phase.js';
import { actionAvailable, checkSameAnswer, seedSync } from './requests.js';
import { sessions } from './session.js';
import { signedWrites } from './signed.js';
import { sockets, storm } from './sockets.js';
import { syncGet } from './sync-get.js';
import { topologyMain } from './topologies.js';
import { verify } from './verify.js';
import { TOPOLOGIES, type TopologyName } from '../test/helpers/topologies.js';

/** Every phase, in the order they run and their figures are written. */
const PHASES: Phase[] = [
  syncGet,
  notModified,
  actionPost,
  push,
  routed,
  routedPush,
  intake,
  pushGrace,
  verify,
  signedWrites,
  sessions,
  acks,
  longPoll,
  long,
  sockets,
  storm,
  fanout,
];
/** Under "medians", fanout's rows come first, then the others in run order. */
const MEDIANS_ORDER: Phase[] = [fanout, ...PHASES.filter((phase) => phase !== fanout)];

const { values: args } = parseArgs({ options: OPTIONS });
const duration = Number(args.duration);
const rounds = Number(args.rounds);
const connections = Number(args.connections);
const warmup = Number(args.warmup);
const longSeconds = Number(args.long);
const runner = args.runner as Runner;
if (runner !== 'dist' && runner !== 'tsx') throw new Error('--runner must be dist or tsx');
const phases = new Set(args.phase.split(','));
const unknownPhases = [...phases].filter((phase) => !PHASES.some(({ name }) => name === phase));
if (unknownPhases.length > 0)
  throw new Error(
    `--phase takes ${PHASES.map(({ name }) => name).join(', ')} (got ${unknownPhases.join(', ')})`,
  );
// Extra node flags for the relay only, e.g. --relay-node-args=--max-semi-space-size=4 (V8 heap tuning).
const relayNodeArgs = args['relay-node-args'].split(' ').filter(Boolean);

const out = (line = '') => process.stdout.write(line + '\n');

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
  const relayArgs = [...profileArgs, ...relayNodeArgs, ...entryArgs(runner, 'src/main.ts')];
  const relay = await spawnChild({
    name: 'relay',
    nodeArgs: relayArgs,
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
  const bench: Bench = {
    args,
    duration,
    rounds,
    connections,
    warmup,
    longSeconds,
    out,
    redisUrl: redis.url,
    relay,
    bare,
    withAction: await actionAvailable(relay),
    idle: await memoryOf(relay.process.pid!),
    raw: {},
    env: RELAY_ENV,
    relayArgs,
    nodeArgs: (source) => entryArgs(runner, source),
    // More relay pods (API role) on the benchmark's Redis, each with a metrics listener.
    startPod: async (name, metricsPort, env = {}) => {
      const port = await freePort();
      return spawnChild({
        name,
        nodeArgs: relayArgs,
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
    },
  };

  const results = new Map<Phase, unknown>();
  for (const phase of PHASES.filter(({ name }) => phases.has(name))) {
    const result = await phase.run(bench);
    if (result !== undefined) results.set(phase, result);
  }
  out();
  out('medians');
  out(HEADER);
  for (const phase of MEDIANS_ORDER) {
    const result = results.get(phase);
    for (const line of result === undefined ? [] : (phase.medians?.(result) ?? [])) out(line);
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
        ...Object.fromEntries(PHASES.map((phase) => [phase.key, results.get(phase)])),
        raw: bench.raw,
      },
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
  await topologyMain(names, { duration, rounds, connections, warmup, runner, env: RELAY_ENV, out });
  process.exit(0);
}
