import { Counter } from 'prom-client';
import { registry } from '../core/metrics.js';

const authOutcomes = new Counter({
  name: 'relay_auth_requests_total',
  help: 'Signable requests by route (action, token, sync, join) and outcome: verified, unsigned, unchecked (mode off), unavailable (Redis), refused_<reason> (the failed check, or required, partial, replayed, pinned).',
  labelNames: ['route', 'outcome'] as const,
  registers: [registry],
});

export function recordAuth(route: string, outcome: string): void {
  authOutcomes.inc({ route, outcome });
}
