import { Redis } from 'ioredis';
import type { RedisTopology } from '../../src/config.js';
import { startPrivateRedis, type PrivateRedis } from '../../src/redis/server.js';

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
