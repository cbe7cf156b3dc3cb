import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * What `npm run stack` and the tests both start outside Docker: the relay as a process of its own, and nginx
 * running deploy/nginx.conf in front of two API pods on loopback ports.
 */

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** `node --import=tsx <script>`: how the relay and its scripts run as processes of their own without a build. */
export const TSX = ['--import=tsx'];

/** Where Debian's package puts it (root's PATH has it; a developer's may not). */
export const NGINX = '/usr/sbin/nginx';

/** Polls `url` until it answers 200; throws after `timeoutMs`, or as soon as `gone()` says the server exited. */
export async function waitUntilOk(url: string, timeoutMs: number, gone = () => false): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await fetch(url).catch(() => undefined))?.status !== 200) {
    if (gone()) throw new Error(`${url}: the process exited`);
    if (Date.now() > deadline) throw new Error(`${url} not ready after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Polls /readyz, as a load balancer would, until the relay at `url` answers 200. The default is generous: on a
 * cluster readiness waits for the sharded subscribers, which take seconds on a loaded machine.
 */
export async function waitUntilReady(url: string, timeoutMs = 15_000, gone?: () => boolean): Promise<void> {
  await waitUntilOk(`${url}/readyz`, timeoutMs, gone);
}

export interface LocalNginx {
  url: string;
  /** stderr carries nginx's error log. */
  process: ChildProcess;
  /** SIGTERM, then its directory removed once it exited. */
  stop(): Promise<void>;
}

export interface LocalNginxOptions {
  /** The two API pods, as host:port. */
  upstreams: [string, string];
  /** Listened on at 127.0.0.1. */
  port: number;
  /** Removes the client-address hash of the socket paths (round robin, the tests' control). */
  roundRobin?: boolean;
}

/** Replaces `from` in `text`, failing when the project's config no longer has it (what runs would differ). */
function swap(text: string, from: string | RegExp, to: string): string {
  const replaced = text.replace(from, to);
  if (replaced === text) throw new Error(`deploy/nginx.conf no longer contains ${String(from)}`);
  return replaced;
}

/**
 * deploy/nginx.conf with only what ties it to Compose changed: the upstream servers are `upstreams`, it listens
 * on 127.0.0.1:`port`, and its pid and temporary files live in `dir`; its error log goes to stderr.
 */
function localConf(dir: string, { upstreams, port, roundRobin = false }: LocalNginxOptions): string {
  let conf = readFileSync(join(REPO_ROOT, 'deploy/nginx.conf'), 'utf8');
  conf = swap(conf, 'pid /tmp/nginx.pid;', `pid ${dir}/nginx.pid;`);
  conf = swap(conf, 'worker_processes auto;', 'worker_processes 1;');
  conf = swap(conf, /^\s*resolver .*$/m, '');
  conf = swap(conf, /server api-1:9876 resolve;/g, `server ${upstreams[0]};`);
  conf = swap(conf, /server api-2:9876 resolve;/g, `server ${upstreams[1]};`);
  conf = swap(conf, 'listen 9876;', `listen 127.0.0.1:${port};`);
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((kind) => {
    mkdirSync(join(dir, kind));
    return `${kind}_temp_path ${dir}/${kind};`;
  });
  conf = swap(conf, 'http {', `http {\n  error_log stderr;\n  ${temp.join('\n  ')}`);
  if (roundRobin) conf = swap(conf, 'hash $binary_remote_addr consistent;', '');
  return conf;
}

/**
 * The real nginx running deploy/nginx.conf (see localConf) with a prefix of its own in a temporary directory, as
 * the user running this (as root, its workers stay root: they write into that directory). Resolves once a
 * request through it reaches a pod's /healthz.
 */
export async function startLocalNginx(options: LocalNginxOptions): Promise<LocalNginx> {
  const dir = mkdtempSync(join(tmpdir(), 'relay-nginx-'));
  const file = join(dir, 'nginx.conf');
  writeFileSync(file, localConf(dir, options));
  const asRoot = process.getuid?.() === 0 ? ' user root;' : '';
  const nginx = spawn(
    existsSync(NGINX) ? NGINX : 'nginx',
    ['-p', dir, '-c', file, '-e', 'stderr', '-g', `daemon off;${asRoot}`],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  nginx.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let ended = false;
  const exited = new Promise<void>((resolve) => {
    const end = () => {
      ended = true;
      resolve();
    };
    nginx.once('exit', end);
    nginx.once('error', end); // no such binary
  });
  const url = `http://127.0.0.1:${options.port}`;
  const stop = async () => {
    nginx.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitUntilOk(`${url}/healthz`, 10_000, () => ended);
  } catch (err) {
    await stop();
    throw new Error(`nginx did not start on port ${options.port}: ${stderr.trim() || 'no output'}`, {
      cause: err,
    });
  }
  return { url, process: nginx, stop };
}
