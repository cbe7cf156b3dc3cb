import type { RedisClient } from '../core/redis/clients.js';
import type { Keys } from '../core/redis/keys.js';
import type { Side } from '../core/sides.js';

const ACK_CAPABLE_FIELD = 'a:';

/**
 * Whether a side of the pair has an ack-capable socket (a stream socket authenticated for that side) on a pod
 * that is alive: one HGETALL of the side's presence, then one EXISTS per pod that counts any.
 */
export async function ackCapable(
  redis: RedisClient,
  keys: Keys,
  wkIdentity: string,
  side: Side,
): Promise<boolean> {
  const fields = await redis.hgetall(keys.presence(wkIdentity, side));
  const pods = Object.entries(fields)
    .filter(([field, count]) => field.startsWith(ACK_CAPABLE_FIELD) && Number(count) > 0)
    .map(([field]) => field.slice(ACK_CAPABLE_FIELD.length));
  for (const pod of pods) if ((await redis.exists(keys.pod(pod))) === 1) return true;
  return false;
}
