import type { Logger } from '../log.js';
import { portAnswers, redisServerInstalled, startPrivateRedis } from './server.js';

/**
 * `npm start` on a laptop, REDIS_URL unset: the Redis that answers on the default address (127.0.0.1:6379) is
 * used, with a warning naming it (on a shared machine it may be someone else's); when nothing answers there, a
 * private redis-server is started (if installed) so the relay runs with one command. Returns the URL to use.
 */
export async function redisForLaptop(defaultUrl: string, log: Logger): Promise<string> {
  const { hostname, port } = new URL(defaultUrl);
  const redis = `${hostname}:${port}`;
  if (await portAnswers(hostname, Number(port))) {
    log.warn(
      'REDIS_URL is unset: using the Redis that answers on the default address; set REDIS_URL to choose',
      {
        redis,
      },
    );
    return defaultUrl;
  }
  if (!redisServerInstalled()) {
    throw new Error(
      `Nothing answers on ${redis} and redis-server is not installed: install it ` +
        '(apt-get install redis-server, brew install redis) or set REDIS_URL to a Redis 7 server.',
    );
  }
  const started = await startPrivateRedis();
  log.warn('started a private redis-server for this process; its data is lost on exit', {
    redisUrl: started.url,
  });
  return started.url;
}
