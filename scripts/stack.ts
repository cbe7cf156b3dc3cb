import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import {
  freePort,
  redisServerInstalled,
  startPrivateRedis,
  type PrivateRedis,
} from '../src/core/redis/server.js';
import {
  NGINX,
  REPO_ROOT,
  TSX,
  startLocalNginx,
  waitUntilOk,
  waitUntilReady,
  type LocalNginx,
} from './stack-parts.js';

/**
 * `npm run stack`: what `docker compose up` starts, without Docker: a private redis-server, two API pods and the
 * worker (src/main.ts, one process each) and nginx running deploy/nginx.conf in front of the pods. Prints the
 * URL and streams every process's log lines prefixed by its name (redis-server's excepted). SIGINT (Ctrl-C) or
 * SIGTERM stops the pods and the worker (they drain), then nginx, then Redis, removes their directories and
 * exits 0.
 */

/** The port Compose publishes; a free one when it is taken. */
const DEFAULT_PORT = 9876;
/** A pod or the worker not ready by then has failed to start. */
const READY_MS = 60_000;

const NAME_WIDTH = 'worker'.length;

function say(name: string, line: string): void {
  process.stdout.write(`${name.padEnd(NAME_WIDTH)} | ${line}\n`);
}

/** Each line of `stream` on our stdout, prefixed by `name`. */
function prefixLines(name: string, stream: Readable): void {
  createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => say(name, line));
}

function refuse(message: string): never {
  process.stderr.write(`stack: ${message}\n`);
  process.exit(1);
}

/** Whether 127.0.0.1:`port` can be listened on. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

interface Relay {
  name: string;
  process: ChildProcess;
  exited: Promise<void>;
  /** Whether it exited (one that exits before it is ready fails the start). */
  gone(): boolean;
}

/** The pods and the worker. */
const relays: Relay[] = [];
let redis: PrivateRedis | undefined;
/** Set once nginx is being started: a stop during its start waits for it, then stops it. */
let nginx: Promise<LocalNginx> | undefined;
let stopping = false;

/** A process that exits before the stack stops stops the stack (exit code 1). */
function stopOnExit(name: string, child: ChildProcess): void {
  child.once('exit', (code, signal) => {
    if (stopping) return;
    say('stack', `${name} exited (${signal ?? `code ${code}`}): stopping the stack`);
    void stop(1);
  });
}

/** src/main.ts in a process of its own, sharing the private Redis. */
function startRelay(name: string, env: Record<string, string>): Relay {
  const child = spawn(process.execPath, [...TSX, join(REPO_ROOT, 'src/main.ts')], {
    cwd: REPO_ROOT,
    env: { ...process.env, REDIS_URL: redis!.url, HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  prefixLines(name, child.stdout!);
  prefixLines(name, child.stderr!);
  stopOnExit(name, child);
  // 'close': its output is read to the end.
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const part = {
    name,
    process: child,
    exited,
    gone: () => child.exitCode !== null || child.signalCode !== null,
  };
  relays.push(part);
  return part;
}

/** The relay processes drain first (nginx still in front), then nginx, then the Redis they used. */
async function stop(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  say('stack', 'stopping: the pods and the worker drain, then nginx and Redis stop');
  for (const relay of relays) relay.process.kill('SIGTERM');
  await Promise.all(relays.map((relay) => relay.exited));
  await nginx?.then(
    (started) => started.stop(),
    () => undefined, // it did not start: nothing to stop
  );
  await redis?.stop();
  say('stack', 'stopped');
  process.exit(code);
}

/** SIGINT reaches the whole group at a Ctrl-C (npm forwards it once more): the first one stops the stack. */
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

async function startUp(): Promise<void> {
  if (!redisServerInstalled())
    refuse('redis-server is not installed (apt-get install redis-server, brew install redis)');
  if (!existsSync(NGINX) && spawnSync('nginx', ['-v']).status !== 0)
    refuse('nginx is not installed (apt-get install nginx, brew install nginx)');

  redis = await startPrivateRedis();
  say('stack', `redis   ${redis.url} (private, nothing persisted, removed on exit)`);

  const pods: [string, string] = ['', ''];
  const ready: Promise<void>[] = [];
  for (const [index, name] of ['api-1', 'api-2'].entries()) {
    const [port, metricsPort] = [await freePort(), await freePort()];
    const pod = startRelay(name, {
      RELAY_ROLE: 'api',
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      // One proxy hop: nginx appends the client address.
      TRUST_PROXY_HOPS: '1',
    });
    pods[index] = `127.0.0.1:${port}`;
    ready.push(waitUntilReady(`http://127.0.0.1:${port}`, READY_MS, pod.gone));
    say('stack', `${name}   http://127.0.0.1:${port} (metrics on ${metricsPort})`);
  }
  const workerMetrics = await freePort();
  const worker = startRelay('worker', { RELAY_ROLE: 'worker', METRICS_PORT: String(workerMetrics) });
  // The worker serves no API: its metrics listener answers /healthz once it runs.
  ready.push(waitUntilOk(`http://127.0.0.1:${workerMetrics}/healthz`, READY_MS, worker.gone));
  say('stack', `worker  metrics on ${workerMetrics}`);
  await Promise.all(ready);

  if (stopping) return;
  const port = (await portFree(DEFAULT_PORT)) ? DEFAULT_PORT : await freePort();
  nginx = startLocalNginx({ upstreams: pods, port });
  const { url, process: child } = await nginx;
  prefixLines('nginx', child.stderr!);
  stopOnExit('nginx', child);
  const which = port === DEFAULT_PORT ? 'the default port' : `a free port: ${DEFAULT_PORT} is in use`;
  say('stack', `multisig-relay at ${url} (nginx with deploy/nginx.conf, on ${which}); Ctrl-C stops it all`);
}

try {
  await startUp();
} catch (err) {
  if (!stopping) {
    say('stack', `could not start: ${(err as Error).message}`);
    await stop(1);
  }
}
