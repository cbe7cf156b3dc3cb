import { Cluster } from 'ioredis';
import type { RedisConfig } from '../config/config.js';
import { createRedis, NotReplicatedError, type RedisClient } from './clients.js';
import { slotOf, type Keys } from './keys.js';

/** Confirmation connections per process; each node runs at most this many WAITs at once. */
const CONFIRM_CONNECTIONS = 4;

/** How long a confirmation marker is kept: only its write matters, not its value. */
const MARKER_TTL_MS = 10_000;

/** The one master of a single Redis or a Sentinel group. */
const MASTER = 'master';

type Settings = Pick<RedisConfig, 'waitReplicas' | 'waitTimeoutMs'>;

/**
 * One node's confirmations. A round is a marker write then `WAIT` on one idle confirmation connection: WAIT
 * counts replicas for the master's replication offset at the connection's last write, so the marker write makes
 * it cover every write any connection finished before it. A request that finds every connection busy joins the
 * next round, which starts when one frees: however many writes arrive, a node has at most CONFIRM_CONNECTIONS
 * WAITs in flight.
 */
class NodeConfirmations {
  private readonly idle: RedisClient[];
  private next: { result: Promise<number>; start: (connection: RedisClient) => void } | undefined;

  constructor(
    pool: RedisClient[],
    private readonly settings: Settings,
  ) {
    this.idle = [...pool];
  }

  /** Replicas that acknowledged every write finished before this call. */
  replicas(marker: string): Promise<number> {
    const connection = this.idle.pop();
    if (connection) return this.round(connection, marker);
    if (!this.next) {
      let start!: (connection: RedisClient) => void;
      const handed = new Promise<RedisClient>((resolve) => (start = resolve));
      this.next = { start, result: handed.then((free) => this.round(free, marker)) };
    }
    return this.next.result;
  }

  private async round(connection: RedisClient, marker: string): Promise<number> {
    const { waitReplicas, waitTimeoutMs } = this.settings;
    try {
      const replies =
        (await connection
          .pipeline()
          .set(marker, '1', 'PX', MARKER_TTL_MS)
          .wait(waitReplicas, waitTimeoutMs)
          .exec()) ?? [];
      for (const [err] of replies) if (err) throw err;
      return Number(replies[1]?.[1] ?? 0);
    } finally {
      const next = this.next;
      this.next = undefined;
      if (next) next.start(connection);
      else this.idle.push(connection);
    }
  }
}

/**
 * "Acknowledged means replicated" (docs/api.md#durability): with REDIS_WAIT_REPLICAS=n, every write is confirmed by
 * `WAIT n` before the relay answers 200, so a failover that promotes a replica keeps it. WAIT blocks the
 * connection it is sent on, so it travels only on confirmation connections of its own: reads, limiters and
 * readiness checks never queue behind one. On a cluster one round runs per master the write touched, not per key.
 */
export class WriteAck {
  /** REDIS_WAIT_REPLICAS=0: a write is acknowledged once its master has it. */
  static readonly none = new WriteAck([], { waitReplicas: 0, waitTimeoutMs: 0 }, undefined);

  private readonly nodes = new Map<string, NodeConfirmations>();

  private constructor(
    private readonly pool: RedisClient[],
    private readonly settings: Settings,
    private readonly keys: Pick<Keys, 'confirmMarker'> | undefined,
  ) {}

  /** The confirmation connections, opened only when writes are to be confirmed. */
  static open(redis: RedisConfig, keys: Pick<Keys, 'confirmMarker'>): WriteAck {
    if (redis.waitReplicas === 0) return WriteAck.none;
    const pool = Array.from({ length: CONFIRM_CONNECTIONS }, () => createRedis(redis.topology, 'confirm'));
    return new WriteAck(pool, redis, keys);
  }

  /**
   * Resolves once enough replicas have the writes to `keys`, which must have been answered already; rejects
   * with NotReplicatedError (→ 503) if not.
   */
  async confirm(...keys: string[]): Promise<void> {
    const { waitReplicas, waitTimeoutMs } = this.settings;
    if (waitReplicas === 0) return;
    const markers = new Map<string, string>();
    for (const key of keys) {
      const node = this.nodeOf(key);
      if (!markers.has(node)) markers.set(node, this.keys!.confirmMarker(node === MASTER ? MASTER : key));
    }
    const acked = await Promise.all(
      [...markers].map(([node, marker]) => this.confirmations(node).replicas(marker)),
    );
    const fewest = Math.min(...acked);
    if (fewest < waitReplicas) {
      throw new NotReplicatedError(
        `WAIT saw ${fewest} of ${waitReplicas} replicas within ${waitTimeoutMs} ms`,
      );
    }
  }

  /** Whether every confirmation connection is connected: a pod that cannot confirm writes is not ready for them. */
  ready(): boolean {
    return this.pool.every((connection) => connection.status === 'ready');
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.pool.map((connection) => connection.quit()));
  }

  /** The master serving `key`: on a cluster by its slot (one map for the pool), elsewhere the one master. */
  private nodeOf(key: string): string {
    const [first] = this.pool;
    if (!(first instanceof Cluster)) return MASTER;
    const slot = slotOf(key);
    return first.slots[slot]?.[0] ?? `slot ${slot}`;
  }

  private confirmations(node: string): NodeConfirmations {
    let confirmations = this.nodes.get(node);
    if (!confirmations) {
      confirmations = new NodeConfirmations(this.pool, this.settings);
      this.nodes.set(node, confirmations);
    }
    return confirmations;
  }
}
