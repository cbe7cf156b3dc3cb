import { createShardedAdapter } from '@socket.io/redis-adapter';
import type { Namespace } from 'socket.io';
import type { Side } from '../core/sides.js';
import { socketMetrics } from '../core/metrics.js';
import type { RedisTopology } from '../core/config/config.js';
import { createRedis, type RedisClient } from '../core/redis/clients.js';

/** The adapter's own connections, shared by both paths of a pod (their channels differ). */
export interface AdapterClients {
  pub: RedisClient;
  sub: RedisClient;
}

/** On a cluster the subscriber holds one connection per master (ioredis' sharded subscribers). */
export function adapterClients(topology: RedisTopology): AdapterClients {
  return { pub: createRedis(topology, 'socketPub'), sub: createRedis(topology, 'socketSub') };
}

/**
 * One channel prefix per path: both servers use the default namespace, so under one prefix a key event would
 * reach wallet sockets on the other pods (and back). Channels: `<prefix>#/#`, and each pod's response channel `<prefix>#/#<pod uid>#`.
 */
export function channelPrefix(keyPrefix: string, side: Side): string {
  return `${keyPrefix}socket:${side}`;
}

/**
 * Sharded pub/sub (SSUBSCRIBE/SPUBLISH, Redis 7), so it keeps working on Redis Cluster. Every stored action
 * record crosses it, batched into notices (emitter.ts), and a pod without a socket of a record's room skips it
 * unparsed: one channel per path serves every pod, where per-room channels (the sharded adapter's default
 * "dynamic" mode) would cost a subscription per joined pair.
 */
export function shardedAdapter(clients: AdapterClients, keyPrefix: string, side: Side) {
  const create = createShardedAdapter(clients.pub, clients.sub, {
    channelPrefix: channelPrefix(keyPrefix, side),
    subscriptionMode: 'static',
  });
  // socket.io calls it with `new`: an arrow function would not do.
  return function relayAdapter(nsp: Namespace) {
    const adapter = create(nsp);
    const publish = adapter.doPublish.bind(adapter);
    // The adapter swallows a failed publish (a debug line only); count it: that event reached this pod's sockets
    // only. The record stays readable, and key-bound ones are replayed on the next join.
    adapter.doPublish = (message) =>
      publish(message).catch((err: unknown) => {
        socketMetrics.adapterError(side);
        throw err;
      });
    return adapter;
  };
}
