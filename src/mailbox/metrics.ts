import { Counter } from 'prom-client';
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
