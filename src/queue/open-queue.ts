import { Queue, type QueueOptions } from 'bullmq';
import { errorFields, type Logger } from '../log.js';
import { isRedisUnavailable } from '../redis/clients.js';

/**
 * A BullMQ Queue handle. Outages reach clients as failed requests (503) and readiness, and the worker's own
 * connection errors are logged by the worker: one line per reconnect here would be noise, other errors are not.
 */
export function openQueue(name: string, options: QueueOptions, log: Logger): Queue {
  const queue = new Queue(name, options);
  queue.on('error', (err) => {
    if (!isRedisUnavailable(err)) log.warn(`${name} queue error`, errorFields(err));
  });
  return queue;
}
