import type { RedisClient } from './client.js';
import { ConditionLog } from '../condition-log.js';
import { errorFields, type Logger } from '../log.js';

/**
 * Redis outages as the process sees them: one line when the first client loses Redis, one when every client
 * that lost it is back, summaries in between. Every client retries about once a second, so a line per error
 * would be several lines a second for as long as the outage lasts.
 */
export class RedisOutageLog {
  private readonly down = new Set<RedisClient>();
  private readonly conditions: ConditionLog;

  constructor(
    private readonly log: Logger,
    summaryMs: number,
  ) {
    this.conditions = new ConditionLog(log, summaryMs);
  }

  failed(client: RedisClient, err: unknown): void {
    this.down.add(client);
    const redis = redisAddress(client);
    if (this.conditions.occurred('redis', 'Redis still unreachable', { redis })) {
      this.log.warn('Redis unreachable', { redis, ...errorFields(err) });
    }
  }

  ready(client: RedisClient): void {
    this.down.delete(client);
    if (this.down.size === 0)
      this.conditions.ended('redis', 'Redis reachable again', { redis: redisAddress(client) });
  }
}

const addresses = new WeakMap<RedisClient, string>();

/** Called by the client factory with the address it connected the client to. */
export function rememberAddress(client: RedisClient, address: string): void {
  addresses.set(client, address);
}

/**
 * Which Redis a client uses, as logs may say it (never a password): `host:port`, `sentinel <name>
 * (host:port,…)` or `cluster (host:port,…)` with the configured seeds.
 */
export function redisAddress(client: RedisClient): string {
  return addresses.get(client) ?? 'unknown';
}
