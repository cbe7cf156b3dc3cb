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
