/** Every queue keeps a failed job this long, for operators to look into. */
export const KEEP_FAILED_SECONDS = 7 * 86_400;

/**
 * A queue's BullMQ prefix: under the deployment's KEY_PREFIX, so two deployments sharing one Redis (staging
 * beside production) never take each other's jobs, and hash-tagged, because BullMQ's scripts touch many keys of
 * a queue at once and on a Redis Cluster they must share a slot (BullMQ's docs: "use a queue prefix inside
 * brackets"). One tag per queue spreads the queues over the masters. The same prefix on every topology: with
 * KEY_PREFIX `relay:` the support queue's keys are `relay:{bull:support}:support:…`.
 */
export function queuePrefix(keyPrefix: string, queue: string): string {
  return `${keyPrefix}{bull:${queue}}`;
}

/** A key of the queue, e.g. `queueKey('relay:', 'support', 'wait')` → `relay:{bull:support}:support:wait`. */
export function queueKey(keyPrefix: string, queue: string, suffix: string): string {
  return `${queuePrefix(keyPrefix, queue)}:${queue}:${suffix}`;
}
