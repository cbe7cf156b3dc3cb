/**
 * `npm run bench -- --topology sentinel,cluster`: GET /v1/sync/{id} and POST /v1/action on each Redis topology
 * (test/helpers/topologies.ts, on loopback), as ratios to a standalone Redis measured in the same run, and POST
 * /v1/action again with REDIS_WAIT_REPLICAS=1 where there are replicas.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, startPrivateRedis } from '../src/core/redis/server.js';
import { compile, entryArgs, OUT_DIR, round, spawnChild, type Runner } from './children.js';
import { medianSummary, type Summary } from './load.js';
import { fmt, HEADER, machine } from './phase.js';
import { getSync, postAction, seedSync } from './requests.js';
import { startTopology, type TopologyName } from '../test/helpers/topologies.js';

export interface TopologyOptions {
  duration: number;
  rounds: number;
  connections: number;
  warmup: number;
  runner: Runner;
  /** The relay's environment (Redis excluded). */
  env: Record<string, string>;
  out(line?: string): void;
}

/** One relay (API role) on `redisEnv`, measured with GET rounds and POST rounds; medians of each. */
async function measureRelay(label: string, redisEnv: Record<string, string>, options: TopologyOptions) {
  const { duration, rounds, connections, warmup, runner, out } = options;
  const port = await freePort();
  const relay = await spawnChild({
    name: `relay-${label}`,
    nodeArgs: entryArgs(runner, 'src/main.ts'),
    env: { ...options.env, ...redisEnv, PORT: String(port) },
    port,
    readyPath: '/readyz',
  });
  try {
    await seedSync(relay);
    await getSync(relay, warmup, connections);
    const gets: Summary[] = [];
    const posts: Summary[] = [];
    for (let i = 0; i < rounds; i++) {
      await seedSync(relay);
      gets.push((await getSync(relay, duration, connections)).summary);
      posts.push((await postAction(relay, duration, connections)).summary);
    }
    const result = { get: medianSummary(gets), post: medianSummary(posts) };
    out(`${`GET  ${label}`.padEnd(22)} ${fmt(result.get)}`);
    out(`${`POST ${label}`.padEnd(22)} ${fmt(result.post)}`);
    return result;
  } finally {
    await relay.stop();
  }
}

export async function topologyMain(names: TopologyName[], options: TopologyOptions): Promise<void> {
  const { duration, rounds, connections, warmup, runner, out } = options;
  mkdirSync(OUT_DIR, { recursive: true });
  if (runner === 'dist') compile();
  out(`topologies: ${rounds} rounds of ${duration} s per endpoint, ${connections} connections`);
  out(HEADER);
  const redis = await startPrivateRedis();
  const results: Record<string, Awaited<ReturnType<typeof measureRelay>>> = {};
  for (const name of ['standalone' as const, ...names.filter((n) => n !== 'standalone')]) {
    const topology = await startTopology(name, redis);
    try {
      results[name] = await measureRelay(name, { ...topology.env, REDIS_WAIT_REPLICAS: '0' }, options);
      if (name !== 'standalone') {
        results[`${name}+wait1`] = await measureRelay(
          `${name} WAIT 1`,
          { ...topology.env, REDIS_WAIT_REPLICAS: '1' },
          options,
        );
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
