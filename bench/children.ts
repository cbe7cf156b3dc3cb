import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * How the benchmark runs TypeScript in its children: `dist` compiles the project once with tsc and runs plain
 * JS (as production would); `tsx` runs the sources through `node --import=tsx`, whose cost is paid at load
 * (transpiling each module once), not per request.
 */
export type Runner = 'dist' | 'tsx';

export interface Child {
  readonly name: string;
  readonly process: ChildProcess;
  readonly url: string;
  /** Milliseconds from spawn until the child answered its readiness probe. */
  readonly readyMs: number;
  stop(): Promise<number | null>;
}

export const ROOT = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
export const OUT_DIR = join(ROOT, '.bench');
const DIST_DIR = join(OUT_DIR, 'dist');

/** Compiles the whole project (src, worker, bench) into .bench/dist for the `dist` runner, Lua scripts beside. */
export function compile(): number {
  const started = Date.now();
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const steps = [
    [tsc, '-p', 'tsconfig.json', '--outDir', DIST_DIR],
    [join(DIST_DIR, 'scripts', 'copy-lua.js'), DIST_DIR],
  ];
  for (const [script, ...args] of steps) {
    const result = spawnSync(process.execPath, [script!, ...args], { cwd: ROOT, stdio: 'inherit' });
    if (result.status !== 0) throw new Error(`${script} failed with exit code ${result.status}`);
  }
  return Date.now() - started;
}

/** The node arguments that run `source` (a path relative to the project root, ending in .ts) with `runner`. */
export function entryArgs(runner: Runner, source: string): string[] {
  return runner === 'tsx'
    ? ['--import=tsx', join(ROOT, source)]
    : [join(DIST_DIR, source.replace(/\.ts$/, '.js'))];
}

export interface SpawnOptions {
  name: string;
  nodeArgs: string[];
  env: Record<string, string>;
  port: number;
  /** Path whose 200 answer means the child is ready to be measured. */
  readyPath: string;
}

/** Starts a node child on a loopback port, its output in .bench/<name>.log, and waits until it is ready. */
export async function spawnChild(options: SpawnOptions): Promise<Child> {
  const log = openSync(join(OUT_DIR, `${options.name}.log`), 'w');
  const started = Date.now();
  const child = spawn(process.execPath, options.nodeArgs, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...options.env },
    stdio: ['ignore', log, log],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  process.once('exit', () => child.kill('SIGKILL'));
  const url = `http://127.0.0.1:${options.port}`;
  const deadline = Date.now() + 30_000;
  while ((await fetch(url + options.readyPath).catch(() => undefined))?.status !== 200) {
    if (child.exitCode !== null) throw new Error(`${options.name} exited with code ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error(`${options.name} not ready after 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return {
    name: options.name,
    process: child,
    url,
    readyMs: Date.now() - started,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

export interface Memory {
  /** Resident set size now, MB. */
  rssMb: number;
  /** Peak resident set size so far, MB. */
  peakMb: number;
}

/** VmRSS and VmHWM of a process, from /proc (Linux). */
export async function memoryOf(pid: number): Promise<Memory> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMb: round(kb('VmRSS') / 1024), peakMb: round(kb('VmHWM') / 1024) };
}

/** User + system CPU time a process has used so far, ms (from /proc/<pid>/stat, clock ticks of 10 ms). */
export async function cpuMsOf(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15 of the whole line.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export function round(value: number, digits = 1): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
