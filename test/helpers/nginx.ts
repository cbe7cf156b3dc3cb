import { existsSync } from 'node:fs';
import { freePort } from '../../src/core/redis/server.js';
import { NGINX, startLocalNginx, type LocalNginx } from '../../scripts/stack-parts.js';

export type TestNginx = LocalNginx;

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
 * The real nginx running the project's deploy/nginx.conf in front of `upstreams` (host:port) on a free loopback
 * port, as `npm run stack` runs it. `roundRobin` removes the client-address hash (the control).
 */
export async function startNginx(upstreams: [string, string], roundRobin = false): Promise<TestNginx> {
  return startLocalNginx({ upstreams, port: await freePort(), roundRobin });
}
