/**
 * `longpoll` phase of `npm run bench`, three figures of the pair's stream:
 * - the long-poll's wake: a stream read held on pod a, a POST of the record it waits for on pod b, and the time
 *   from the POST's answer to the read's answer (goal p99 ≤ 50 ms);
 * - a POST /v1/action (10 KB `tx`) with the stream append against the relay before the stream
 *   (`--longpoll-before <checkout>`, e.g. a git worktree of the commit before it, its dependencies installed): the
 *   pod's CPU and Redis's CPU per POST in interleaved rounds, both pods run with tsx (goal ≤ 1.1 ×);
 * - Redis memory per active pair (INFO memory's used_memory over `--longpoll-pairs` pairs, each a 10 KB request
 *   and its reply), on each of those pods.
 * - the heap a held read adds (in this process: the pod's registry of held reads and its room channels on the
 *   benchmark's Redis, `--longpoll-held` reads, one pair each and twenty per pair; goal ≤ 2 KB).
 * Without `--longpoll-before` the POST and memory figures are measured on this relay alone.
 */
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Redis } from 'ioredis';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/core/log.js';
import { keysFor } from '../src/core/redis/keys.js';
import { freePort } from '../src/core/redis/server.js';
import { LongPolls } from '../src/mailbox/index.js';
import { channelClients, RoomChannels } from '../src/realtime/room-channels.js';
import { ROOT, round, spawnChild, type Child } from './children.js';
import { drive, median, percentile } from './load.js';
import { verdict, type Bench, type Phase } from './phase.js';
import { ACTION_BODY, JSON_HEADERS } from './requests.js';

const WAKES = 300;
const WAKE_GOAL_MS = 50;
const RATIO_GOAL = 1.1;

interface Wake {
  p50: number;
  p99: number;
  max: number;
  count: number;
}

interface PostCost {
  pod: string;
  cpuUsPerPost: number;
  redisUsPerPost: number;
  rps: number;
}

interface LongPollResult {
  wake: Wake;
  heldHeapBytes: { perPair1: number; perPair20: number };
  posts: PostCost[];
  memory: { pod: string; bytesPerPair: number }[];
  ratio?: { cpu: number; redis: number };
}

const post = async (pod: Child, body: object): Promise<{ epoch: string; offset: number }> => {
  const res = await fetch(`${pod.url}/v1/action`, {
    method: 'POST',
    headers: JSON_HEADERS,
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`POST /v1/action answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { data: { epoch: string; offset: number } }).data;
};

const request = (wkIdentity: string) => ({ ...(JSON.parse(ACTION_BODY) as object), wkIdentity });
const reply = (wkIdentity: string) => ({
  chain: 'btc',
  wkIdentity,
  action: 'txid',
  payload: 'ab'.repeat(32),
});

/** Milliseconds from each POST's answer (pod b) to the answer of the read held on pod a. */
async function wakes(a: Child, b: Child, redis: Redis): Promise<Wake> {
  const times: number[] = [];
  const pairs = 20;
  const positions = new Map<string, { epoch: string; offset: number }>();
  for (let p = 0; p < pairs; p++) positions.set(`bench-lp-${p}`, await post(b, request(`bench-lp-${p}`)));
  for (let i = 0; i < WAKES; i++) {
    const pair = `bench-lp-${i % pairs}`;
    const { epoch, offset } = positions.get(pair)!;
    const read = fetch(`${a.url}/v1/action/${pair}?to=key&after=${offset}&epoch=${epoch}&wait=25`).then(
      async (res) => ({
        at: performance.now(),
        body: (await res.json()) as { data: { records: unknown[] } },
      }),
    );
    // Held once pod a subscribed the pair's channel.
    for (;;) {
      const [, count] = (await redis.call('PUBSUB', 'SHARDNUMSUB', `relay:socket:key:{${pair}}`)) as [
        string,
        number,
      ];
      if (Number(count) > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const stored = await post(b, request(pair));
    const answered = performance.now();
    const { at, body } = await read;
    if (body.data.records.length !== 1)
      throw new Error(`a held read answered ${body.data.records.length} records`);
    positions.set(pair, stored);
    times.push(at - answered);
  }
  times.sort((x, y) => x - y);
  return {
    p50: percentile(times, 50),
    p99: percentile(times, 99),
    max: round(times.at(-1)!, 2),
    count: times.length,
  };
}

async function redisCpuUs(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

/** The pod's and Redis's CPU per POST of the 10 KB request over `seconds`. */
async function postCost(pod: Child, redis: Redis, seconds: number, connections: number): Promise<PostCost> {
  const redisBefore = await redisCpuUs(redis);
  const { summary } = await drive(pod.process.pid!, {
    url: `${pod.url}/v1/action`,
    connections,
    duration: seconds,
    method: 'POST',
    headers: JSON_HEADERS,
    body: ACTION_BODY,
  });
  const redisUs = (await redisCpuUs(redis)) - redisBefore;
  return {
    pod: pod.name,
    cpuUsPerPost: summary.cpuUsPerRequest,
    redisUsPerPost: round(redisUs / summary.total, 1),
    rps: summary.rps,
  };
}

/** Redis's used_memory per pair that stored a 10 KB request and its reply through `pod`. */
async function memoryPerPair(pod: Child, redis: Redis, pairs: number): Promise<number> {
  const intents = async () => Number((await redis.call('MEMORY', 'USAGE', 'relay:push:intents')) ?? 0);
  const used = async () => Number(/^used_memory:(\d+)/m.exec(await redis.info('memory'))?.[1]);
  const [usedBefore, intentsBefore] = [await used(), await intents()];
  for (let start = 0; start < pairs; start += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, pairs - start) }, async (_, i) => {
        const pair = `bench-mem-${pod.name}-${start + i}`;
        await post(pod, request(pair));
        await post(pod, reply(pair));
      }),
    );
  }
  // The push intents the requests appended are the worker's, not the pairs'.
  const grown = (await used()) - usedBefore - ((await intents()) - intentsBefore);
  return Math.round(grown / pairs);
}

/**
 * Heap bytes per held read, after a full collection, with `reads` held over `reads / perPair` pairs: the hold's
 * timer, watch and promises, and the pair's share of a subscription (the route adds one listener on the
 * response it has anyway).
 */
async function heapPerHeld(redisUrl: string, reads: number, perPair: number): Promise<number> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const clients = channelClients(loadConfig({ REDIS_URL: redisUrl }).redis.topology);
  const channels = new RoomChannels(
    clients,
    keysFor('relay:'),
    0,
    createLogger('error', {}, () => {}),
  );
  const polls = new LongPolls(channels, reads);
  const heap = () => {
    gc();
    return process.memoryUsage().heapUsed;
  };
  try {
    const before = heap();
    let listening = 0;
    const held = Array.from({ length: reads }, (_, i) =>
      polls.hold(
        '127.0.0.1',
        'key',
        `bench-heap-${Math.floor(i / perPair)}`,
        600_000,
        () => {},
        async () => {
          listening += 1;
          return false;
        },
      ),
    );
    while (listening < reads) await new Promise((resolve) => setTimeout(resolve, 20));
    const holding = heap();
    polls.drain();
    await Promise.all(held);
    return Math.round((holding - before) / reads);
  } finally {
    clients.pub.disconnect();
    clients.sub.disconnect();
  }
}

export const longPoll: Phase<LongPollResult> = {
  name: 'longpoll',
  key: 'longpoll',
  async run(bench: Bench) {
    const { args, env, redisUrl, out, rounds, duration, connections, warmup } = bench;
    const redis = new Redis(redisUrl);
    const pod = async (name: string, nodeArgs: string[]) => {
      const port = await freePort();
      return spawnChild({
        name,
        nodeArgs,
        env: { ...env, PORT: String(port), REDIS_URL: redisUrl, METRICS_PORT: '0' },
        port,
        readyPath: '/readyz',
      });
    };
    const [a, b] = [await pod('longpoll-a', bench.relayArgs), await pod('longpoll-b', bench.relayArgs)];
    let wake: Wake;
    try {
      out(`long-poll wake: ${WAKES} reads held on pod a, each woken by a POST on pod b`);
      wake = await wakes(a, b, redis);
      out(
        `wake after the POST's answer: p50 ${wake.p50} ms, p99 ${wake.p99} ms, max ${wake.max} ms ` +
          `(goal p99 ≤ ${WAKE_GOAL_MS}: ${verdict(wake.p99 <= WAKE_GOAL_MS)})`,
      );
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
    const reads = Number(args['longpoll-held']);
    const heldHeapBytes = {
      perPair1: await heapPerHeld(redisUrl, reads, 1),
      perPair20: await heapPerHeld(redisUrl, reads, 20),
    };
    out(
      `heap per held read (${reads} held): ${heldHeapBytes.perPair1} B one per pair, ${heldHeapBytes.perPair20} B ` +
        `twenty per pair (goal ≤ 2048: ${verdict(Math.max(heldHeapBytes.perPair1, heldHeapBytes.perPair20) <= 2048)})`,
    );
    const before = args['longpoll-before'];
    const pods = [
      ...(before ? [await pod('before', ['--import=tsx', join(before, 'src/main.ts')])] : []),
      await pod('after', ['--import=tsx', join(ROOT, 'src/main.ts')]),
    ];
    try {
      out(
        `POST /v1/action (10 KB tx): ${rounds} interleaved rounds of ${duration} s, ${connections} connections`,
      );
      for (const target of pods) await postCost(target, redis, warmup, connections);
      const posts: PostCost[] = [];
      for (let i = 1; i <= rounds; i++) {
        for (const target of pods) {
          const cost = await postCost(target, redis, duration, connections);
          posts.push(cost);
          out(
            `round ${i} ${cost.pod.padEnd(7)} ${String(cost.rps).padStart(6)} POST/s, pod ${cost.cpuUsPerPost} µs, ` +
              `Redis ${cost.redisUsPerPost} µs per POST`,
          );
        }
      }
      const medianOf = (name: string, field: 'cpuUsPerPost' | 'redisUsPerPost') =>
        median(posts.filter((cost) => cost.pod === name).map((cost) => cost[field]));
      const ratio = before
        ? {
            cpu: round(medianOf('after', 'cpuUsPerPost') / medianOf('before', 'cpuUsPerPost'), 2),
            redis: round(medianOf('after', 'redisUsPerPost') / medianOf('before', 'redisUsPerPost'), 2),
          }
        : undefined;
      if (ratio)
        out(
          `after / before: pod CPU ${ratio.cpu} ×, Redis CPU ${ratio.redis} × per POST (goal ≤ ${RATIO_GOAL}: ` +
            `${verdict(ratio.cpu <= RATIO_GOAL)}, ${verdict(ratio.redis <= RATIO_GOAL)})`,
        );
      const pairs = Number(args['longpoll-pairs']);
      const memory = [];
      for (const target of pods) {
        const bytesPerPair = await memoryPerPair(target, redis, pairs);
        memory.push({ pod: target.name, bytesPerPair });
        out(
          `Redis memory per active pair (${pairs} pairs, a 10 KB request and its reply), ${target.name}: ${bytesPerPair} B`,
        );
      }
      out();
      return { wake, heldHeapBytes, posts, memory, ...(ratio ? { ratio } : {}) };
    } finally {
      await Promise.all(pods.map((target) => target.stop()));
      redis.disconnect();
    }
  },
  medians: (result) => [
    `long-poll wake p99 ${result.wake.p99} ms; heap per held read ${result.heldHeapBytes.perPair1} B` +
      (result.ratio ? `; POST after/before: pod ${result.ratio.cpu} ×, Redis ${result.ratio.redis} ×` : '') +
      `; Redis per pair ${result.memory.map((m) => `${m.pod} ${m.bytesPerPair} B`).join(', ')}`,
  ],
};
