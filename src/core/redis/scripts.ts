import type { RedisClient } from './clients.js';

/**
 * A Lua script registered on a client (EVALSHA with automatic EVAL fallback after a Redis restart).
 * Returns a typed caller taking the script's keys and arguments. A script must be given every key it touches
 * (KEYS), all in one hash slot: Redis Cluster refuses anything else.
 */
export function defineScript<R>(
  redis: RedisClient,
  name: string,
  numberOfKeys: number,
  lua: string,
): (keys: string[], args: (string | number)[]) => Promise<R> {
  redis.defineCommand(name, { numberOfKeys, lua });
  const command = (redis as unknown as Record<string, (...a: (string | number)[]) => Promise<R>>)[name]!;
  return (keys, args) => command.call(redis, ...keys, ...args);
}
