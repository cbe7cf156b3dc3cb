import type { RedisClient } from '../core/redis/clients.js';
import type { Keys } from '../core/redis/keys.js';

/** One side's presence hash of a pair (docs/operations.md#key-layout-and-redis-cli-recipes), decoded. */
export interface PresenceHash {
  /** Per pod: sockets joined to the room on the side's path. */
  joined: Map<string, number>;
  /** Per pod: of those, stream sockets authenticated for the side. */
  ackable: Map<string, number>;
  /** When the side's last socket left (ms), or null. */
  lastSeen: number | null;
}

/** Decodes HGETALL's answer: an object (ioredis' hgetall) or the flat list a script returns. */
export function decodePresence(fields: Record<string, string> | readonly unknown[]): PresenceHash {
  const pairs: [string, string][] = Array.isArray(fields)
    ? Array.from({ length: Math.floor(fields.length / 2) }, (_, i) => [
        String(fields[2 * i]),
        String(fields[2 * i + 1]),
      ])
    : Object.entries(fields as Record<string, string>);
  const hash: PresenceHash = { joined: new Map(), ackable: new Map(), lastSeen: null };
  for (const [field, value] of pairs) {
    if (field === 'lastSeen') hash.lastSeen = Number(value);
    else if (field.startsWith('j:')) hash.joined.set(field.slice(2), Number(value));
    else if (field.startsWith('a:')) hash.ackable.set(field.slice(2), Number(value));
  }
  return hash;
}

/** The pods of `hash` with a count of either kind. */
export function podsOf(hash: PresenceHash): Set<string> {
  return new Set([...hash.joined.keys(), ...hash.ackable.keys()]);
}

/** Which of `pods` are alive: their liveness key exists (one EXISTS each; a cluster spreads them over its slots). */
export async function livePods(redis: RedisClient, keys: Keys, pods: Iterable<string>): Promise<Set<string>> {
  const list = [...pods];
  const exists = await Promise.all(list.map((pod) => redis.exists(keys.pod(pod))));
  return new Set(list.filter((_, i) => exists[i] === 1));
}

/** Sockets of `counts` held by live pods. */
export function countLive(counts: Map<string, number>, live: Set<string>): number {
  let total = 0;
  for (const [pod, n] of counts) if (live.has(pod)) total += n;
  return total;
}
