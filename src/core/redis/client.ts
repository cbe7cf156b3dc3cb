import type { Cluster, Redis } from 'ioredis';

/** A connection of any topology: both classes share the command interface. */
export type RedisClient = Redis | Cluster;
