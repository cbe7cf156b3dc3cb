import type { Logger } from '../log.js';
import { redisServerInstalled, startPrivateRedis } from './server.js';

/**
 * `npm start` with REDIS_URL unset: a private redis-server of this process on a free loopback port, never
 * whatever answers on 127.0.0.1:6379 (on a shared machine, someone else's). Returns its URL.
 */
export async function redisForLaptop(log: Logger): Promise<string> {
  if (!redisServerInstalled()) {
    throw new Error(
      'REDIS_URL is unset and redis-server is not installed: install it (apt-get install redis-server, ' +
        'brew install redis) or set REDIS_URL to a Redis 7 server (e.g. REDIS_URL=redis://127.0.0.1:6379).',
    );
  }
  const started = await startPrivateRedis();
  log.warn('REDIS_URL is unset: started a private redis-server for this process; its data is lost on exit', {
    redisUrl: started.url,
  });
  return started.url;
}
