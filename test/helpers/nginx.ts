import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/core/redis/server.js';
import { readRepoFile } from './manifests.js';
import { waitFor } from './wait.js';

export interface TestNginx {
  url: string;
  stop(): Promise<void>;
}

/** Replaces `from` in `text`, failing when the project's config no longer has it (the test would prove nothing). */
function swap(text: string, from: string | RegExp, to: string): string {
  const replaced = text.replace(from, to);
  if (replaced === text) throw new Error(`deploy/nginx.conf no longer contains ${String(from)}`);
  return replaced;
}

/** Where Debian's package puts it (root's PATH has it; a developer's may not). */
export const NGINX = '/usr/sbin/nginx';

/**
 * The nginx suites run only where nginx is installed (.ci/run installs it): elsewhere they are skipped with one
 * line saying why, instead of failing on a missing binary.
 */
export function requireNginx(this: Mocha.Context): void {
  if (existsSync(NGINX)) return;
  process.stdout.write(`  nginx tests skipped: ${NGINX} is not installed (apt-get install nginx)\n`);
  this.skip();
}

/**
 * The real nginx running the project's deploy/nginx.conf, with only what ties it to Compose changed: the
 * upstream servers point at `upstreams` (host:port), it listens on a free loopback port, and its pid, logs and
 * temporary files live in a directory of its own. `roundRobin` removes the client-address hash (the control).
 */
export async function startNginx(upstreams: [string, string], roundRobin = false): Promise<TestNginx> {
  const dir = mkdtempSync(join(tmpdir(), 'relay-nginx-'));
  const port = await freePort();
  let conf = readRepoFile('deploy/nginx.conf');
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
  conf = swap(conf, 'http {', `http {\n  error_log ${dir}/error.log;\n  ${temp.join('\n  ')}`);
  if (roundRobin) conf = swap(conf, 'hash $binary_remote_addr consistent;', '');
  writeFileSync(join(dir, 'nginx.conf'), conf);

  const nginx = spawn(
    NGINX,
    ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-g', 'daemon off; user root;'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  nginx.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => nginx.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  await waitFor('nginx to answer', async () => {
    if (nginx.exitCode !== null) throw new Error(`nginx exited: ${stderr}`);
    return (await fetch(`${url}/healthz`).catch(() => undefined))?.status === 200;
  });
  return {
    url,
    async stop() {
      nginx.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
