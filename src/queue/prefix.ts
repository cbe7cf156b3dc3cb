/**
 * BullMQ's scripts touch many keys of a queue at once, so on a Redis Cluster every key of a queue must share a
 * hash tag (BullMQ's docs: "use a queue prefix inside brackets"). One tag per queue spreads the queues over the
 * masters. The same prefix on every topology: the support queue's keys are `{bull:support}:support:…`.
 */
export function queuePrefix(queue: string): string {
  return `{bull:${queue}}`;
}

/** A key of the queue, e.g. `queueKey('support', 'wait')` → `{bull:support}:support:wait`. */
export function queueKey(queue: string, suffix: string): string {
  return `${queuePrefix(queue)}:${queue}:${suffix}`;
}
