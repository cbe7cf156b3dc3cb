import { Counter } from 'prom-client';
import { registry } from '../core/metrics.js';
import type { RegistrationLimit } from '../push/index.js';

const syncTokensSkipped = new Counter({
  name: 'relay_sync_key_tokens_skipped_total',
  help: 'Syncs stored and answered 200 whose keyToken was not registered because a token registration limit refused it, by limit (address: TOKEN_REGISTRATIONS_PER_ADDRESS_PER_DAY; pair_side: TOKEN_REGISTRATIONS_PER_HOUR).',
  labelNames: ['limit'] as const,
  registers: [registry],
});

const recoveryPubWrites = new Counter({
  name: 'relay_recoverypub_writes_total',
  help: 'Recovery xpub records stored, by outcome (created: a new record, charged to its client address\'s RECOVERYPUB_CREATIONS_PER_ADDRESS_PER_DAY; replaced: the pair\'s own record rewritten). Creations refused are relay_rate_limit_rejections_total{limiter="recoverypub"}.',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export function recordSyncTokenSkipped(limit: RegistrationLimit): void {
  syncTokensSkipped.inc({ limit });
}

export function recordRecoveryPubWrite(outcome: 'created' | 'replaced'): void {
  recoveryPubWrites.inc({ outcome });
}
