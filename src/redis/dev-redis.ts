import type { Logger } from '../log.js';
import { portAnswers, redisServerInstalled, startPrivateRedis } from './server.js';

/**
 * `npm start` on a laptop: when REDIS_URL is not set and nothing answers on 127.0.0.1:6379, start a private
 * redis-server (if installed) so the relay runs with one command. Returns the URL to use.
 */
export async function redisForLaptop(defaultUrl: string, log: Logger): Promise<string> {
  if (await portAnswers('127.0.0.1', 6379)) return defaultUrl;
  if (!redisServerInstalled()) {
    throw new Error(
      'Nothing answers on 127.0.0.1:6379 and redis-server is not installed: install it ' +
        '(apt-get install redis-server, brew install redis) or set REDIS_URL to a Redis 7 server.',
    );
  }
  const redis = await startPrivateRedis();
  log.warn('started a private redis-server for this process; its data is lost on exit', {
    redisUrl: redis.url,
  });
  return redis.url;
}
