/**
 * What every phase of `npm run bench` shares: the command line's options, the running benchmark a phase is given
 * (its Redis, the relay and the bare server, the options), the shape of a phase, and the table's row format.
 */
import { spawnSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import type { parseArgs } from 'node:util';
import { round, type Child, type Memory } from './children.js';
import type { Measured, Summary } from './load.js';

export const OPTIONS = {
  duration: { type: 'string', default: '10' },
  rounds: { type: 'string', default: '5' },
  connections: { type: 'string', default: '64' },
  warmup: { type: 'string', default: '3' },
  long: { type: 'string', default: '60' },
  runner: { type: 'string', default: 'dist' },
  phase: {
    type: 'string',
    default:
      'sync-get,not-modified,action-post,push,routed,routed-push,intake,push-grace,verify,signed,session,acks,longpoll,long',
  },
  // A checkout of the relay before the pair's stream (its dependencies installed): the longpoll phase's baseline.
  'longpoll-before': { type: 'string' },
  'longpoll-pairs': { type: 'string', default: '1000' },
  'longpoll-held': { type: 'string', default: '10000' },
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
} as const;

export type Args = ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>['values'];

/** The running benchmark a phase measures with. */
export interface Bench {
  args: Args;
  duration: number;
  rounds: number;
  connections: number;
  warmup: number;
  longSeconds: number;
  out(line?: string): void;
  redisUrl: string;
  relay: Child;
  bare: Child;
  /** Whether this build of the relay has POST /v1/action. */
  withAction: boolean;
  /** The relay's memory before any load. */
  idle: Memory;
  /** autocannon's raw results by run name, for the results file. */
  raw: Record<string, Measured['raw'][]>;
  /** The relay's environment (Redis excluded). */
  env: Record<string, string>;
  /** The node arguments that run a relay pod. */
  relayArgs: string[];
  /** The node arguments that run a bench source file (children.ts entryArgs). */
  nodeArgs(source: string): string[];
  /** Starts one more relay pod (API role) on the benchmark's Redis with a metrics listener on `metricsPort`. */
  startPod(name: string, metricsPort: number, env?: Record<string, string>): Promise<Child>;
}

export interface Phase<Result = unknown> {
  /** Its name for --phase. */
  name: string;
  /** Its entry in the results file. */
  key: string;
  /** Measures and prints as it goes; undefined when there was nothing to measure. */
  run(bench: Bench): Promise<Result | undefined>;
  /** Its lines under "medians". */
  medians?(result: Result): string[];
}

export const fmt = (s: Summary) =>
  `${String(s.rps).padStart(8)} ${String(s.p50).padStart(7)} ${String(s.p99).padStart(7)}` +
  ` ${String(s.non2xx + s.errors).padStart(6)} ${String(s.cpuUsPerRequest).padStart(8)}`;
export const HEADER =
  `${'run'.padEnd(22)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)}` +
  ` ${'fail'.padStart(6)} ${'cpu µs/req'.padStart(8)}`;
export const verdict = (okay: boolean) => (okay ? 'met' : 'MISSED');

export function machine() {
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
