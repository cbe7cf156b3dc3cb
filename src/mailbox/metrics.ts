import { Counter } from 'prom-client';
import { registry } from '../core/metrics.js';

const pushEnqueueMisses = new Counter({
  name: 'relay_push_enqueue_misses_total',
  help: 'Stored actions whose push intent could not be appended (the action was still stored and answered 200).',
  registers: [registry],
});

export function recordPushEnqueueMiss(): void {
  pushEnqueueMisses.inc();
}
