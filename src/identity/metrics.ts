import { Counter } from 'prom-client';
import { registry } from '../core/metrics.js';

const authOutcomes = new Counter({
  name: 'relay_auth_requests_total',
  help: 'Signable requests by route (action, token, sync, join) and outcome: verified, session (a session token), unsigned, unchecked (mode off), unavailable (Redis), refused_<reason> (the failed check, or required, partial, replayed, pinned, token_and_signature).',
  labelNames: ['route', 'outcome'] as const,
  registers: [registry],
});

export function recordAuth(route: string, outcome: string): void {
  authOutcomes.inc({ route, outcome });
}

const sessions = new Counter({
  name: 'relay_sessions_total',
  help: 'Session exchanges by subject kind (pair, wallet) and outcome: issued, or refused_<reason> (the failed check).',
  labelNames: ['kind', 'outcome'] as const,
  registers: [registry],
});

export function recordSession(kind: string, outcome: string): void {
  sessions.inc({ kind, outcome });
}

const tokenChecks = new Counter({
  name: 'relay_token_checks_total',
  help: 'Session token checks by route (read, join, action, token, revoke) and outcome: valid, required (none where one is needed), invalid, expired, revoked.',
  labelNames: ['route', 'outcome'] as const,
  registers: [registry],
});

export function recordTokenCheck(route: string, outcome: string): void {
  tokenChecks.inc({ route, outcome });
}

const revocations = new Counter({
  name: 'relay_session_revocations_total',
  help: 'Explicit session revocations.',
  registers: [registry],
});

export function recordRevocation(): void {
  revocations.inc();
}
