import type { RedisClient } from '../core/redis/clients.js';
import type { Keys } from '../core/redis/keys.js';
import type { Side } from '../core/sides.js';
import { countLive, decodePresence, livePods } from './presence-hash.js';

/**
 * Whether a side of a pair has an ack-capable socket (a stream socket authenticated for that side) on a live pod:
 * one HGETALL of its presence and one EXISTS per pod that counts one.
 */
export async function ackCapable(
  redis: RedisClient,
  keys: Keys,
  wkIdentity: string,
  side: Side,
): Promise<boolean> {
  const { ackable } = decodePresence(await redis.hgetall(keys.presence(wkIdentity, side)));
  if (ackable.size === 0) return false;
  return countLive(ackable, await livePods(redis, keys, ackable.keys())) > 0;
}
