import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { ApiProfile } from '../../src/core/config/config.js';
import { freePort } from '../../src/core/redis/server.js';
import { TSX, waitUntilReady } from '../../scripts/stack-parts.js';
import { testEnv } from './api.js';
import { servesProfile } from './contract.js';

/** A child process whose output is collected as it comes. */
export interface Child {
  process: ChildProcess;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout's complete lines. */
  lines(): string[];
  /** The exit code, or 'still running' after `timeoutMs` (so a hung child fails the test, not the run). */
  exit(timeoutMs?: number): Promise<number | null | 'still running'>;
  /** SIGKILL, for `finally` blocks: a no-op once it exited. */
  kill(): void;
}

export function spawnNode(args: string[], env: Record<string, string>): Child {
  const child = spawn(process.execPath, [...TSX, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return {
    process: child,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    lines: () => stdout.split('\n').slice(0, -1),
    exit: (timeoutMs = 20_000) => exitOf(child, timeoutMs),
    kill: () => void child.kill('SIGKILL'),
  };
}

/** Runs `args` to the end: exit code and output. */
export async function runNode(
  args: string[],
  env: Record<string, string>,
  timeoutMs?: number,
): Promise<{ code: number | null | 'still running'; stdout: string; stderr: string }> {
  const child = spawnNode(args, env);
  const code = await child.exit(timeoutMs);
  child.kill();
  return { code, stdout: child.stdout, stderr: child.stderr };
}

/** The child's exit code, or 'still running' after `timeoutMs`. */
export function exitOf(child: ChildProcess, timeoutMs = 20_000): Promise<number | null | 'still running'> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    const timer = setTimeout(() => resolve('still running'), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

/** Every process below `pid` (Linux: read from /proc). */
export function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so read after the last ')'.
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  const visit = (parent: number) => {
    for (const [child, ppid] of parentOf) {
      if (ppid === parent) {
        found.push(child);
        visit(child);
      }
    }
  };
  visit(pid);
  return found;
}

/**
 * The temporary directories in the command lines of `pids` (Linux: read from /proc): redis-server's `--dir`,
 * nginx's prefix (`-p`; nginx rewrites its command line as one string).
 */
export function tempDirs(pids: number[]): string[] {
  const dirs = pids.flatMap((pid) => {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      return [...args.matchAll(/(?:--dir|-p) (\S+)/g)].map((match) => match[1]!);
    } catch {
      return []; // gone meanwhile
    }
  });
  return [...new Set(dirs)];
}

/** Whether a process with this pid exists (and is not a zombie). */
export function alive(pid: number): boolean {
  try {
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
}

/** An API pod in a process of its own (`src/main.ts`, RELAY_ROLE=api) on a free port. */
export interface ApiPod {
  url: string;
  child: Child;
  /** SIGTERM, then the exit (SIGKILL if it hangs). */
  stop(): Promise<void>;
}

/** `nodeArgs`: options for node itself, e.g. a capped heap. */
export async function startApiPod(
  overrides: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<ApiPod> {
  const port = await freePort();
  const child = spawnNode(
    [...nodeArgs, 'src/main.ts'],
    testEnv({ RELAY_ROLE: 'api', PORT: String(port), ...overrides }),
  );
  const url = `http://127.0.0.1:${port}`;
  servesProfile(url, (overrides.API_PROFILE ?? 'standard') as ApiProfile);
  try {
    await waitUntilReady(url, 60_000); // a cold start of several pods at once takes long on a busy machine
  } catch (err) {
    child.kill();
    throw new Error(`${(err as Error).message}: ${child.stderr}${child.stdout.slice(-2000)}`, { cause: err });
  }
  return {
    url,
    child,
    stop: async () => {
      child.process.kill('SIGTERM');
      await child.exit(10_000);
      child.kill();
    },
  };
}
