import { Redis } from 'ioredis';
import type { RedisTopology } from '../../src/core/config/config.js';
import { startPrivateRedis, type PrivateRedis } from '../../src/core/redis/server.js';

let server: PrivateRedis | undefined;
let admin: Redis | undefined;

/** The test run's own redis-server on a free loopback port (never the machine's 6379). */
export async function startTestRedis(): Promise<void> {
  server = await startPrivateRedis();
  admin = new Redis(server.url, { maxRetriesPerRequest: null });
  admin.on('error', () => {}); // outage tests stop the server on purpose
}

export async function stopTestRedis(): Promise<void> {
  admin?.disconnect();
  await server?.stop();
}

export function testRedis(): PrivateRedis {
  if (!server) throw new Error('test redis not started (root hooks missing?)');
  return server;
}

/** The test run's Redis as the relay's configuration names it. */
export function testTopology(): RedisTopology {
  return { kind: 'standalone', url: testRedis().url, explicit: true };
}

/** A plain client for asserting what Redis holds. */
export function redis(): Redis {
  if (!admin) throw new Error('test redis not started (root hooks missing?)');
  return admin;
}

/**
 * The commands clients sent to the test Redis while `action` ran (MONITOR; not those a script ran inside), each
 * as its arguments. A marker sent after `action` tells when every earlier command has been seen.
 */
export async function commandsDuring(action: () => Promise<unknown>): Promise<string[][]> {
  const monitor = await redis().monitor();
  const seen: string[][] = [];
  const marker = `commands-during-${Date.now()}-${Math.random()}`;
  const done = new Promise<void>((resolve) => {
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (args[0]?.toLowerCase() === 'echo' && args[1] === marker) resolve();
      else if (source !== 'lua') seen.push(args);
    });
  });
  try {
    await action();
    await redis().echo(marker);
    await done;
    return seen;
  } finally {
    monitor.disconnect();
  }
}
