import { Counter, Gauge } from 'prom-client';
import { registry } from '../core/metrics.js';

const intentAppendMisses = new Counter({
  // Named for the enqueue that preceded the intents stream: kept for dashboards and alerts.
  name: 'relay_push_enqueue_misses_total',
  help: 'Stored actions whose push intent could not be appended (the action was still stored and answered 200).',
  registers: [registry],
});

export function recordIntentAppendMiss(): void {
  intentAppendMisses.inc();
}

const notModified = new Counter({
  name: 'relay_http_not_modified_total',
  help: 'Conditional reads answered 304 Not Modified (If-None-Match named the current ETag), by route template.',
  labelNames: ['route'] as const,
  registers: [registry],
});

/** Counts a 304 of `route` (its template, `/v1/action/:id`); the label's child is made once per route. */
export function notModifiedCounter(route: string): () => void {
  const child = notModified.labels({ route });
  return () => child.inc();
}

const streamAppends = new Counter({
  name: 'relay_stream_appends_total',
  help: "Action records given an offset in their pair's stream, by direction (key, wallet).",
  labelNames: ['direction'] as const,
  registers: [registry],
});

const streamRecoveries = new Counter({
  name: 'relay_stream_recoveries_total',
  help: 'Reads of a stream from a client position (via join: a socket join with since; via poll: a stream read), by path and whether every record after the position was still there.',
  labelNames: ['via', 'path', 'recovered'] as const,
  registers: [registry],
});

export const streamMetrics = {
  appended: (direction: string) => streamAppends.inc({ direction }),
  recovery: (via: 'join' | 'poll', path: string, recovered: boolean) =>
    streamRecoveries.inc({ via, path, recovered: String(recovered) }),
};

/** What became of an ack (docs/api.md#acks-and-receipts). */
export type AckOutcome = 'recorded' | 'repeat' | 'not_found' | 'unauthorized' | 'rate_limited';

const acks = new Counter({
  name: 'relay_acks_total',
  help: 'Acks of records, by way (socket, http) and outcome (recorded: the first, its receipt stored; repeat: acknowledged before, nothing stored; not_found; unauthorized; rate_limited).',
  labelNames: ['via', 'outcome'] as const,
  registers: [registry],
});

export const ackMetrics = {
  counted: (via: 'socket' | 'http', outcome: AckOutcome) => acks.inc({ via, outcome }),
};

const longPollWaiting = new Gauge({
  name: 'relay_longpoll_waiting',
  help: 'Stream reads this pod holds now (long-polls waiting for a record).',
  registers: [registry],
});

/** How a stream read was answered. */
export type LongPollOutcome = 'records' | 'timeout' | 'immediate' | 'over_limit' | 'drained';

const longPolls = new Counter({
  name: 'relay_longpoll_total',
  help: 'Stream reads (GET /v1/action/{id} with to and after), by outcome: records (held, then woken by a record), timeout (held for its wait), immediate (not held), over_limit (LONGPOLL_PER_IP reached), drained (answered at SIGTERM).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const longPollMetrics = {
  waiting: (change: number) => longPollWaiting.inc(change),
  answered: (outcome: LongPollOutcome) => longPolls.inc({ outcome }),
};
