/**
 * `fanout` phase of `npm run bench` (docs/operations.md#cross-pod-events): four API pods, the key socket of each
 * pair on one of pods b, c, d (clients in a process of their own, bench/fanout-clients.ts), every POST
 * /v1/action through pod a. Per channel mode and rate: notices and bytes each pod received per posted record, its
 * CPU per posted record, and the POST → event latency p50/p99 with the share delivered and the duplicates.
 *
 * Modes: `room` (a channel per room, the default), `partitions` (SOCKET_CHANNEL_PARTITIONS), and `before`: the
 * pods of another checkout (`--fanout-before <dir>`, e.g. a git worktree of the previous release, run with tsx),
 * measured in the same run.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { freePort } from '../src/core/redis/server.js';
import { cpuMsOf, ROOT, round, spawnChild, type Child } from './children.js';
import type { ClientsReport } from './fanout-clients.js';
import { median, onSchedule, percentile } from './load.js';
import type { Phase } from './phase.js';

export interface FanoutMode {
  name: string;
  /** The node arguments that run a pod (the entry point included). */
  nodeArgs: string[];
  env: Record<string, string>;
}

export interface FanoutOptions {
  modes: FanoutMode[];
  /** The relay's environment (Redis included) for every pod. */
  env: Record<string, string>;
  pairs: number;
  rates: number[];
  seconds: number;
  out(line?: string): void;
}

interface Pod {
  child: Child;
  metricsPort: number;
}

export interface FanoutStep {
  mode: string;
  rate: number;
  posted: number;
  failed: number;
  deliveredPct: number;
  duplicates: number;
  p50: number;
  p99: number;
  /** Per pod a, b, c, d: notices received per posted record (undefined: the pod has no such metric). */
  noticesPerRecord: (number | undefined)[];
  /** Per pod: bytes the process read (Redis, and for pod a the POSTs) per posted record. */
  readBytesPerRecord: number[];
  /** Per pod: CPU µs per posted record. */
  cpuUsPerRecord: number[];
}

const PADDING = 'a'.repeat(10 * 1024);
const PREFIX = 'fanout-';

async function readBytes(pid: number): Promise<number> {
  const io = await readFile(`/proc/${pid}/io`, 'utf8');
  return Number(/^rchar: (\d+)/m.exec(io)?.[1] ?? NaN);
}

async function noticesOf(pod: Pod): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${pod.metricsPort}/metrics`)).text();
  const lines = text.split('\n').filter((l) => l.startsWith('relay_socket_notices_received_total'));
  if (!text.includes('# TYPE relay_socket_notices_received_total')) return undefined;
  return lines.reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

interface Counters {
  notices: (number | undefined)[];
  read: number[];
  cpu: number[];
}

async function counters(pods: Pod[]): Promise<Counters> {
  return {
    notices: await Promise.all(pods.map(noticesOf)),
    read: await Promise.all(pods.map((pod) => readBytes(pod.child.process.pid!))),
    cpu: await Promise.all(pods.map((pod) => cpuMsOf(pod.child.process.pid!))),
  };
}

/** Child messages, one at a time. */
function ask(child: ChildProcess, message: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    child.once('message', (answer: unknown) => {
      if (typeof answer === 'object' && answer !== null && 'error' in answer)
        reject(new Error(String(answer.error)));
      else resolve(answer);
    });
    child.send(message as string);
  });
}

/** POSTs at `rate` per second for `seconds` through `url`, on a steady schedule: the failures. */
async function post(url: string, pairs: number, rate: number, seconds: number, seq: { next: number }) {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const target = new URL('/v1/action', url);
  const total = rate * seconds;
  let failed = 0;
  await onSchedule(rate, total, (n) => {
    const id = seq.next + n;
    const body = JSON.stringify({
      chain: 'btc',
      wkIdentity: `${PREFIX}${id % pairs}`,
      action: 'wksigningrequest',
      payload: `${performance.timeOrigin + performance.now()}:${id}:${PADDING}`,
    });
    return new Promise<void>((resolve) => {
      const req = request(
        target,
        { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
        (res) => {
          if (res.statusCode !== 200) failed++;
          res.resume().on('end', resolve);
        },
      );
      req.on('error', () => {
        failed++;
        resolve();
      });
      req.end(body);
    });
  });
  seq.next += total;
  agent.destroy();
  return { total, failed };
}

async function startPods(mode: FanoutMode, env: Record<string, string>): Promise<Pod[]> {
  return Promise.all(
    ['a', 'b', 'c', 'd'].map(async (letter) => {
      const [port, metricsPort] = [await freePort(), await freePort()];
      const child = await spawnChild({
        name: `fanout-${mode.name}-${letter}`,
        nodeArgs: mode.nodeArgs,
        env: { ...env, ...mode.env, PORT: String(port), METRICS_PORT: String(metricsPort) },
        port,
        readyPath: '/readyz',
      });
      return { child, metricsPort };
    }),
  );
}

async function measureMode(mode: FanoutMode, options: FanoutOptions, seq: { next: number }) {
  const { out, pairs, rates, seconds } = options;
  const pods = await startPods(mode, options.env);
  const clients = fork(join(ROOT, 'bench', 'fanout-clients.ts'), [], {
    execArgv: ['--import=tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const steps: FanoutStep[] = [];
  try {
    await ask(clients, { pods: pods.slice(1).map((pod) => pod.child.url), pairs, prefix: PREFIX });
    // Warm-up: every pod's code paths compiled before the first measured step.
    await post(pods[0]!.child.url, pairs, Math.min(...rates), 2, seq);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await ask(clients, 'report');
    for (const rate of rates) {
      const before = await counters(pods);
      const { total, failed } = await post(pods[0]!.child.url, pairs, rate, seconds, seq);
      // Events still on their way after the last answer.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const after = await counters(pods);
      const report = (await ask(clients, 'report')) as ClientsReport;
      const sorted = report.latenciesMs.sort((x, y) => x - y);
      const perRecord = (a: number, b: number, scale = 1) => round(((a - b) * scale) / total, 2);
      const step: FanoutStep = {
        mode: mode.name,
        rate,
        posted: total,
        failed,
        deliveredPct: round((100 * report.received) / (total - failed), 2),
        duplicates: report.duplicates,
        p50: percentile(sorted, 50),
        p99: percentile(sorted, 99),
        noticesPerRecord: after.notices.map((n, i) =>
          n === undefined ? undefined : perRecord(n, before.notices[i]!),
        ),
        readBytesPerRecord: after.read.map((n, i) => Math.round((n - before.read[i]!) / total)),
        cpuUsPerRecord: after.cpu.map((n, i) => Math.round(perRecord(n, before.cpu[i]!, 1000))),
      };
      steps.push(step);
      out(
        `fanout ${mode.name} at ${rate}/s: p50 ${step.p50} ms, p99 ${step.p99} ms, ${step.deliveredPct} % delivered, ` +
          `${step.duplicates} duplicates, ${failed} failed; per posted record, pods a,b,c,d: notices ` +
          `${step.noticesPerRecord.map((n) => n ?? '-').join(',')}, bytes read ${step.readBytesPerRecord.join(',')}, ` +
          `CPU µs ${step.cpuUsPerRecord.join(',')}`,
      );
    }
  } finally {
    clients.send('close');
    await Promise.all(pods.map((pod) => pod.child.stop()));
  }
  return steps;
}

export async function fanoutPhase(options: FanoutOptions): Promise<FanoutStep[]> {
  const seq = { next: 0 };
  const steps: FanoutStep[] = [];
  for (const mode of options.modes) steps.push(...(await measureMode(mode, options, seq)));
  return steps;
}

/** The medians line of each mode and rate (one run per step: the figures themselves). */
export function fanoutSummary(steps: FanoutStep[]): string[] {
  return steps.map(
    (s) =>
      `fanout ${s.mode} ${s.rate}/s: p99 ${s.p99} ms (goal ≤ 50 at 2000/s), delivered ${s.deliveredPct} %, ` +
      `${s.duplicates} duplicates; notices per record on b,c,d ${s.noticesPerRecord
        .slice(1)
        .map((n) => n ?? '-')
        .join(',')} ` +
      `(rooms held: a third each), median bytes read per record on b,c,d ${median(s.readBytesPerRecord.slice(1))}`,
  );
}

export const fanout: Phase<FanoutStep[]> = {
  name: 'fanout',
  key: 'fanout',
  run({ args, relayArgs, env, redisUrl, out }) {
    const before = args['fanout-before'];
    const modes: FanoutMode[] = [
      ...(before
        ? [{ name: 'before', nodeArgs: ['--import=tsx', join(before, 'src/main.ts')], env: {} }]
        : []),
      { name: 'room', nodeArgs: relayArgs, env: { SOCKET_CHANNEL_PARTITIONS: '0' } },
      {
        name: `partitions=${args['fanout-partitions']}`,
        nodeArgs: relayArgs,
        env: { SOCKET_CHANNEL_PARTITIONS: args['fanout-partitions'] },
      },
    ];
    return fanoutPhase({
      modes,
      env: { ...env, REDIS_URL: redisUrl },
      pairs: Number(args['fanout-pairs']),
      rates: args['fanout-rates'].split(',').map(Number),
      seconds: Number(args['fanout-seconds']),
      out,
    });
  },
  medians: fanoutSummary,
};
