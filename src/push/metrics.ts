import { Counter } from 'prom-client';
import { registry } from '../core/metrics.js';

const pushMessages = new Counter({
  name: 'relay_push_messages_total',
  help: 'Push messages by outcome (sent: accepted by the provider; token_removed: the provider refused the token for good, it was removed; failed: not delivered, not retried further).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

const pushSkipped = new Counter({
  name: 'relay_push_skipped_total',
  help: 'Push jobs that sent nothing, by reason (superseded: the mailbox holds a newer record; expired; no_tokens; throttled: the pair side had PUSH_PER_PAIR_PER_MINUTE pushes this minute; delivered: the target side acknowledged the record).',
  labelNames: ['reason'] as const,
  registers: [registry],
});

const pushDelayed = new Counter({
  name: 'relay_push_delayed_total',
  help: 'Push jobs queued to wait PUSH_ACK_GRACE_MS after their record: the target side had an ack-capable socket.',
  registers: [registry],
});

const pushIntents = new Counter({
  name: 'relay_push_intents_total',
  help: "Push intents the worker's intake took, by outcome (queued: a push job was added; no_tokens: the side has no token; expired: the action expired first; malformed: not an intent of the relay's, dropped).",
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export type MessageOutcome = 'sent' | 'token_removed' | 'failed';

export function recordPushMessages(outcome: MessageOutcome, count: number): void {
  if (count > 0) pushMessages.inc({ outcome }, count);
}

export type SkipReason = 'superseded' | 'expired' | 'no_tokens' | 'throttled' | 'delivered';

export function recordPushSkipped(reason: SkipReason): void {
  pushSkipped.inc({ reason });
}

export function recordPushDelayed(count: number): void {
  if (count > 0) pushDelayed.inc(count);
}

export type IntentOutcome = 'queued' | 'no_tokens' | 'expired' | 'malformed';

export function recordPushIntents(outcome: IntentOutcome, count: number): void {
  if (count > 0) pushIntents.inc({ outcome }, count);
}
