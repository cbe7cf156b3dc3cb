import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A private, throw-away redis-server on a loopback port: used by the test run, the benchmark and by `npm start`
 * on a laptop that has no Redis running. Nothing is persisted.
 */
export interface PrivateRedis {
  readonly port: number;
  readonly url: string;
  /** Its working directory, removed when this process exits, however it exits. */
  readonly dir: string;
  stop(): Promise<void>;
  /** Starts the server again on the same port (after stop), for outage tests. */
  start(): Promise<void>;
  /** Sends a signal to the running server (SIGSTOP/SIGCONT freeze and thaw it in failover tests). */
  signal(name: NodeJS.Signals): void;
}

export interface PrivateRedisOptions {
  port?: number;
  /** More redis-server arguments: replication, cluster mode. */
  args?: string[];
  /** Runs `redis-server <file> --sentinel` instead: `file` is written into the server's directory. */
  sentinelConfig?: string;
}

export function redisServerInstalled(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** True when something accepts TCP connections on host:port within timeoutMs. */
export function portAnswers(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** One exit listener for every server a process starts (a cluster is six of them). */
const exitCleanups: (() => void)[] = [];
function atExit(cleanup: () => void): void {
  if (exitCleanups.length === 0) process.once('exit', () => exitCleanups.forEach((run) => run()));
  exitCleanups.push(cleanup);
}

/**
 * redis-server runs under this shell, which ties its life to ours: it polls our pid and, once we are gone
 * (even by SIGKILL, which runs no exit handler), kills redis-server and removes its directory. SIGTERM from us
 * (stop) kills redis-server and leaves the directory for a restart. `$1` our pid, `$2` the directory. The shell
 * leads a process group of its own: a signal to ours (Ctrl-C, `timeout`) stops us, and the server after us.
 */
const WATCHDOG = `
parent=$1; dir=$2; shift 2
redis-server "$@" &
redis=$!
echo $redis > "$dir/redis.pid"
trap 'kill -9 $redis 2>/dev/null; wait $redis; exit 0' TERM
while kill -0 "$parent" 2>/dev/null && kill -0 "$redis" 2>/dev/null; do sleep 0.5 & wait $!; done
kill -9 $redis 2>/dev/null; wait $redis; status=$?
kill -0 "$parent" 2>/dev/null || rm -rf "$dir"
exit $status
`;

/** redis-server could not bind the port it was given. */
class PortTaken extends Error {}

/** Tries with another free port this many times when the one chosen was taken before redis-server bound it. */
const PORT_ATTEMPTS = 5;

export async function startPrivateRedis(options: PrivateRedisOptions = {}): Promise<PrivateRedis> {
  let chosen = options.port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'relay-redis-'));
  let child: ChildProcess | undefined;
  const mode: string[] = [];
  if (options.sentinelConfig !== undefined) {
    const file = join(dir, 'sentinel.conf');
    writeFileSync(file, options.sentinelConfig);
    mode.push(file, '--sentinel');
  }

  const serverPid = () => Number(readFileSync(join(dir, 'redis.pid'), 'utf8'));
  const serverAlive = () => {
    try {
      process.kill(serverPid(), 0);
      return true;
    } catch {
      return false;
    }
  };

  const start = async () => {
    if (child && child.exitCode === null) return;
    child = spawn(
      'sh',
      [
        '-c',
        WATCHDOG,
        'redis-watchdog',
        String(process.pid),
        dir,
        ...mode,
        '--port',
        String(chosen),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        // The stream node size an operator is told to set (docs/operations.md#redis-sizing).
        ...(options.sentinelConfig === undefined
          ? ['--maxmemory-policy', 'noeviction', '--stream-node-max-bytes', '1024']
          : []),
        ...(options.args ?? []),
      ],
      { stdio: 'ignore', detached: true },
    );
    const deadline = Date.now() + 10_000;
    while (!(await portAnswers('127.0.0.1', chosen, 200))) {
      if (child.exitCode !== null) throw new PortTaken(`redis-server exited with code ${child.exitCode}`);
      if (Date.now() > deadline) throw new Error(`redis-server did not start on port ${chosen}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Something answers: ours, or a server that took the port first (ours then exits at once on EADDRINUSE).
    await new Promise((resolve) => setTimeout(resolve, 50));
    if (!serverAlive()) throw new PortTaken(`port ${chosen} was taken by another process`);
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGTERM');
    });
  };

  // A port from freePort can be taken by another process before redis-server binds it: choose again.
  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      break;
    } catch (err) {
      if (!(err instanceof PortTaken) || options.port !== undefined || attempt === PORT_ATTEMPTS) throw err;
      await stop();
      chosen = await freePort();
    }
  }
  atExit(() => {
    child?.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });
  // redis-server itself, not its watchdog shell (which records the server's pid).
  const signal = (name: NodeJS.Signals) => {
    if (child) process.kill(serverPid(), name);
  };
  return { port: chosen, url: `redis://127.0.0.1:${chosen}`, dir, start, stop, signal };
}
