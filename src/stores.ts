import type { Config } from './config.js';
import type { RedisClient } from './core/redis/clients.js';
import { keysFor, type Keys } from './core/redis/keys.js';
import { WriteAck } from './core/redis/write-ack.js';
import { AuthStore, SessionStore } from './identity/index.js';
import { ActionStore } from './mailbox/index.js';
import { MarketStore } from './market/index.js';
import { RecoveryPubStore, SyncStore } from './pairing/index.js';
import { TokenStore } from './push/index.js';
import { ackCapable } from './realtime/index.js';
import type { Side } from './core/sides.js';

/**
 * The role's clients the stores run on: `store` for most, and `actions` for the pair's mailbox, whose megabyte
 * payloads queue behind themselves on their own fail-fast client, never in front of other requests' commands.
 */
export interface StoreClients {
  store: RedisClient;
  actions: RedisClient;
}

/** Every feature's store, built in this one place for the API and the worker alike. */
export function openStores(config: Config, redis: StoreClients, keys: Keys, ack: WriteAck) {
  return {
    actions: new ActionStore(redis.actions, keys, config.action.ttlSeconds, config.stream, ack),
    auth: new AuthStore(redis.store, keys, ack),
    sessions: new SessionStore(redis.store, keys, ack),
    sync: new SyncStore(redis.store, keys, config.sync, ack),
    tokens: new TokenStore(redis.store, keys, ack),
    recoveryPub: new RecoveryPubStore(redis.store, keys, config.recoveryPub.ttlSeconds, ack),
    market: new MarketStore(redis.store, keys),
    presence: {
      ackCapable: (wkIdentity: string, side: Side) => ackCapable(redis.store, keys, wkIdentity, side),
    },
  };
}

export type Stores = ReturnType<typeof openStores>;

/** The role's key names and write confirmations (REDIS_WAIT_REPLICAS), which the stores share. */
export function openKeys(config: Config): { keys: Keys; ack: WriteAck } {
  const keys = keysFor(config.keyPrefix);
  return { keys, ack: WriteAck.open(config.redis, keys) };
}
