import { Cluster, type Redis } from 'ioredis';
import { shardedSubscriberConnections } from '../library-patches.js';
import { errorFields, type Logger } from '../log.js';
import { recordRedisLivenessFailure } from '../metrics.js';
import { settlesWithin } from '../role.js';
import type { RedisClient } from './clients.js';

export interface LivenessOptions {
  /** The client's name in the log line and the metric's `client` label. */
  client: string;
  /** How often each connection is sent a PING, and how long its answer may take. */
  intervalMs: number;
  /** Longer commands the connection runs (a blocking read's BLOCK): a PING waits behind them. */
  blockedMs?: number;
  log: Logger;
}

/** The connections a client's traffic takes: its own, or a cluster's masters (its subscriber: one per master). */
function connectionsOf(client: RedisClient): Redis[] {
  if (!(client instanceof Cluster)) return [client];
  return shardedSubscriberConnections(client) ?? client.nodes('master');
}

/**
 * Application-level liveness of a long-lived connection (docs/operations.md#connection-liveness). TCP keep-alive
 * alone misses a peer that stopped forwarding without closing (a proxy, a NAT or a load balancer in between that
 * lost the flow): the kernel next to the relay still acknowledges, and a subscriber waits for messages forever.
 * So every `intervalMs` each connection gets a PING (valid in subscriber mode); one that does not answer within
 * `intervalMs` (+ `blockedMs`) is counted, logged once and dropped, and ioredis connects again (resubscribing a
 * subscriber's channels, resending what was unanswered; a cluster's node is replaced by the next slot refresh). A
 * dead connection is noticed within two intervals.
 */
export class Liveness {
  private healthy = true;
  /** A connection was dropped and has not answered since: its return is logged. */
  private replacing = false;
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> | undefined;
  /** Asked for while a round ran: one more round follows it at once. */
  private again = false;
  private stopped = false;
  private readonly checkNow = () => this.check();

  constructor(
    private readonly redis: RedisClient,
    private readonly options: LivenessOptions,
  ) {
    // A connection that came back is checked at once, so readiness does not wait a whole interval for it.
    for (const event of ['ready', 'subscribersReady', '+node']) redis.on(event, this.checkNow);
    this.schedule();
  }

  /** False from a connection found dead (or not connected) until every connection answers again. */
  alive(): boolean {
    return this.healthy;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const event of ['ready', 'subscribersReady', '+node']) this.redis.off(event, this.checkNow);
  }

  private schedule(): void {
    clearTimeout(this.timer);
    if (!this.stopped) this.timer = setTimeout(this.checkNow, this.options.intervalMs).unref();
  }

  private check(): void {
    if (this.stopped) return;
    if (this.round) {
      this.again = true;
      return;
    }
    this.round = this.ping()
      .catch((err: unknown) => this.options.log.error('Redis liveness check failed', errorFields(err)))
      .finally(() => {
        this.round = undefined;
        if (this.again) {
          this.again = false;
          this.check();
        } else this.schedule();
      });
  }

  private async ping(): Promise<void> {
    const { client, intervalMs, blockedMs = 0, log } = this.options;
    // Not yet connected ('wait': a cluster's idle subscriber) or gone for good ('end'): nothing to ask.
    const connections = connectionsOf(this.redis).filter((c) => c.status !== 'wait' && c.status !== 'end');
    const answers = await Promise.all(
      connections.map(async (connection) => {
        // ioredis already knows of a connection that is reconnecting: not a liveness failure, but not serving.
        if (connection.status !== 'ready') return false;
        if (await settlesWithin(connection.ping(), intervalMs + blockedMs)) return true;
        if (this.stopped || connection.status !== 'ready') return false;
        recordRedisLivenessFailure(client);
        log.warn('Redis connection not answering; replacing it', {
          client,
          waitedMs: intervalMs + blockedMs,
        });
        this.replacing = true;
        // Not disconnect(true): it waits for a FIN a silent path never sends, until ioredis destroys it 2 s later.
        connection.stream.destroy();
        return false;
      }),
    );
    this.healthy = answers.every(Boolean);
    if (this.healthy && this.replacing) log.info('Redis connection replaced', { client });
    if (this.healthy) this.replacing = false;
  }
}
