import type { Redis } from 'ioredis';
import { ConditionLog } from '../condition-log.js';
import { errorFields, type Logger } from '../log.js';

/**
 * Redis outages as the process sees them: one line when the first client loses Redis, one when every client
 * that lost it is back, summaries in between. Every client retries about once a second, so a line per error
 * would be several lines a second for as long as the outage lasts.
 */
export class RedisOutageLog {
  private readonly down = new Set<Redis>();
  private readonly conditions: ConditionLog;

  constructor(
    private readonly log: Logger,
    summaryMs: number,
  ) {
    this.conditions = new ConditionLog(log, summaryMs);
  }

  failed(client: Redis, err: unknown): void {
    this.down.add(client);
    const redis = redisAddress(client);
    if (this.conditions.occurred('redis', 'Redis still unreachable', { redis })) {
      this.log.warn('Redis unreachable', { redis, ...errorFields(err) });
    }
  }

  ready(client: Redis): void {
    this.down.delete(client);
    if (this.down.size === 0)
      this.conditions.ended('redis', 'Redis reachable again', { redis: redisAddress(client) });
  }
}

/** `host:port` of a client's Redis: what logs may say about it (never the password). */
export function redisAddress(client: Redis): string {
  const { host, port } = client.options;
  return `${host ?? '127.0.0.1'}:${port ?? 6379}`;
}
