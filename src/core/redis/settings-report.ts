import { Cluster } from 'ioredis';
import type { RedisTopology } from '../config/config.js';
import { errorFields, type Logger } from '../log.js';
import type { RoleHandle } from '../role.js';
import { createRedis } from './clients.js';
import { redisAddress } from './outage-log.js';

/** `INFO` fields (`name:value` lines) as a map. */
function infoFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  return fields;
}

/**
 * Says which Redis this process uses, and once it first answers, the settings the relay depends on (docs/operations.md#redis-sizing):
 * `maxmemory-policy noeviction`, so that nothing acknowledged is evicted, and a `maxmemory`, so that a full
 * Redis refuses writes instead of the machine running out of memory. Read with INFO, which managed Redis
 * services allow where CONFIG is disabled; a refusal is logged and changes nothing else.
 */
export function reportRedisSettings(topology: RedisTopology, log: Logger): RoleHandle {
  const client = createRedis(topology, 'queue');
  const redis = redisAddress(client);
  log.info('using Redis', { redis });
  client.once('ready', () => {
    // Every master of a cluster holds records: each must keep them.
    const masters = client instanceof Cluster ? client.nodes('master') : [client];
    Promise.all(masters.map((node) => node.info('memory')))
      .then((texts) =>
        texts.forEach((text) => {
          const info = infoFields(text);
          const policy = info.get('maxmemory_policy') ?? 'unknown';
          const maxmemory = Number(info.get('maxmemory') ?? 0);
          log.info('Redis settings', { redis, maxmemoryPolicy: policy, maxmemoryBytes: maxmemory });
          if (policy !== 'noeviction') {
            log.warn('Redis maxmemory-policy is not noeviction: it may evict records and queued jobs', {
              redis,
              maxmemoryPolicy: policy,
            });
          }
          if (maxmemory === 0) {
            log.warn('Redis has no maxmemory: it can grow until the machine runs out of memory', { redis });
          }
        }),
      )
      .catch((err: unknown) => log.warn('could not read the Redis settings', { redis, ...errorFields(err) }))
      .finally(() => client.disconnect());
  });
  return {
    async stop() {
      client.disconnect();
    },
  };
}
