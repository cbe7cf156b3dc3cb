import { Cluster } from 'ioredis';
import type { RedisConfig } from '../config.js';
import { NotReplicatedError, type RedisClient } from '../redis/clients.js';

/**
 * "Acknowledged means replicated" (docs/api.md#durability): with REDIS_WAIT_REPLICAS=n, every write is confirmed by `WAIT n`
 * before the relay answers 200, so a failover that promotes a replica keeps it. WAIT covers every earlier write
 * of the connection it is sent on, so it must travel on the connection that made the write: on a single Redis
 * or Sentinel master that is the client's one connection; on a cluster, the connection to the master of the
 * key's slot, which a pipeline naming the key reaches (ioredis routes a pipeline by its keys' slot).
 */
export class WriteAck {
  constructor(
    private readonly redis: RedisClient,
    private readonly settings: Pick<RedisConfig, 'waitReplicas' | 'waitTimeoutMs'>,
  ) {}

  /** Resolves once enough replicas have the writes to `keys`; rejects with NotReplicatedError (→ 503) if not. */
  async confirm(...keys: string[]): Promise<void> {
    const { waitReplicas, waitTimeoutMs } = this.settings;
    if (waitReplicas === 0) return;
    const routes = this.redis instanceof Cluster ? [...new Set(keys)] : keys.slice(0, 1);
    const acked = await Promise.all(routes.map((key) => this.waitOnNodeOf(key)));
    const fewest = Math.min(...acked);
    if (fewest < waitReplicas) {
      throw new NotReplicatedError(
        `WAIT saw ${fewest} of ${waitReplicas} replicas within ${waitTimeoutMs} ms`,
      );
    }
  }

  private async waitOnNodeOf(key: string): Promise<number> {
    const { waitReplicas, waitTimeoutMs } = this.settings;
    const replies = (await this.redis.pipeline().exists(key).wait(waitReplicas, waitTimeoutMs).exec()) ?? [];
    for (const [err] of replies) if (err) throw err;
    return Number(replies[1]?.[1] ?? 0);
  }
}
