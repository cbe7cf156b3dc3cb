import { errorFields, type Logger } from '../log.js';
import { isRedisUnavailable } from '../redis/clients.js';

interface EmitsErrors {
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/**
 * Every BullMQ Queue and Worker gets this listener: without one, BullMQ prints each error's raw stack to
 * stderr. Lost connections are the Redis outage log's to report (once per outage); only other errors get a line.
 */
export function logBullErrors(target: EmitsErrors, what: string, log: Logger): void {
  target.on('error', (err) => {
    if (!isRedisUnavailable(err)) log.warn(`${what} error`, errorFields(err));
  });
}
