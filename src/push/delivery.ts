import { UnrecoverableError, type Job, type MinimalJob } from 'bullmq';
import { actionTypeRule } from '../action-types/index.js';
import { errorFields, type Logger } from '../core/log.js';
import type { DeliveryAttempt } from '../core/queue/attempt.js';
import { recordPushMessages, recordPushSkipped, type SkipReason as SkipMetric } from './metrics.js';
import type { PushResult, PushSender } from './fcm/index.js';
import { tokenDigest, type PushJob } from './jobs.js';
import type { ReceiptReader } from './receipts.js';
import type { PushThrottle } from './throttle.js';
import type { TokenStore } from './tokens/store.js';

type SkipReason = Exclude<SkipMetric, 'no_tokens'>;

/** Some tokens failed temporarily; the job's next attempt sends to those only, no sooner than `retryAfterMs`. */
export class PushRetryError extends Error {
  override name = 'PushRetryError';
  constructor(
    message: string,
    readonly retryAfterMs: number | undefined,
  ) {
    super(message);
  }
}

/**
 * Exponential backoff with jitter (half to all of base·2ⁿ, the base stored on the job by the push intake), stretched to
 * the provider's Retry-After when it asked for a longer pause.
 */
export function pushBackoff(attemptsMade: number, _type?: string, err?: Error, job?: MinimalJob): number {
  const backoff = job?.opts.backoff;
  const baseMs = typeof backoff === 'object' ? (backoff.delay ?? 0) : (backoff ?? 0);
  const exponential = baseMs * 2 ** Math.max(0, attemptsMade - 1) * (0.5 + Math.random() / 2);
  const asked = err instanceof PushRetryError ? (err.retryAfterMs ?? 0) : 0;
  return Math.round(Math.max(exponential, asked));
}

/** What delivery reads of the mailbox: the JSON text of the record a pair's mailbox holds, or null. */
export interface MailboxReader {
  readJson(wkIdentity: string): Promise<string | null>;
}

/** The job is about one stored record: once the mailbox holds another one (the reply came) or none, it is moot. */
function skipReason(stored: string | null, job: PushJob, nowMs: number): SkipReason | undefined {
  if (Date.parse(job.expiresAt) <= nowMs) return 'expired';
  if (stored === null) return 'expired';
  return (JSON.parse(stored) as Pick<PushJob, 'id'>).id === job.id ? undefined : 'superseded';
}

interface Tally {
  sent: string[];
  removed: string[];
  failed: string[];
  retry: string[];
  retryAfterMs: number | undefined;
  /** The provider answered 429 for at least one token: the whole queue pauses. */
  rateLimited: boolean;
}

function tally(tokens: string[], results: PromiseSettledResult<PushResult>[]): Tally {
  const out: Tally = {
    sent: [],
    removed: [],
    failed: [],
    retry: [],
    retryAfterMs: undefined,
    rateLimited: false,
  };
  results.forEach((settled, i) => {
    const token = tokens[i]!;
    // A send that threw (a bug, not an answer) is tried again with the job rather than lost.
    const result: PushResult =
      settled.status === 'fulfilled' ? settled.value : { outcome: 'retry', reason: 'send failed' };
    if (result.outcome === 'sent') out.sent.push(token);
    else if (result.outcome === 'remove') out.removed.push(token);
    else if (result.outcome === 'failed') out.failed.push(token);
    else {
      out.retry.push(token);
      out.retryAfterMs = Math.max(out.retryAfterMs ?? 0, result.retryAfterMs ?? 0) || undefined;
      out.rateLimited ||= result.rateLimited === true;
    }
  });
  return out;
}

/** Reasons by count, for the job's log line: codes only, never tokens. */
function reasons(results: PromiseSettledResult<PushResult>[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const settled of results) {
    const reason =
      settled.status === 'rejected'
        ? (errorFields(settled.reason).errName as string)
        : 'reason' in settled.value
          ? settled.value.reason
          : undefined;
    if (reason) counts[reason] = (counts[reason] ?? 0) + 1;
  }
  return counts;
}

/** What a push delivery reads and updates, and where it logs. */
export interface PushDeliveryParts {
  sender: PushSender;
  actions: MailboxReader;
  tokens: TokenStore;
  throttle: PushThrottle;
  receipts: ReceiptReader;
  /** The queue's pause after a rate limit that named none (PUSH_RETRY_BASE_MS). */
  retryBaseMs: number;
  log: Logger;
}

/** What a push job answers BullMQ once done. */
export type PushOutcome = { skipped: SkipReason } | { sent: number; removed?: number; failed?: number };

/**
 * Sends the push of one stored action to the pair's tokens of the action's side (docs/api.md#what-a-push-carries). Progress is kept in
 * the job (`done`), so an attempt after a temporary failure goes to the failed tokens only; refused tokens leave
 * the pair at once.
 */
export async function deliverPush(
  parts: PushDeliveryParts,
  job: Job<PushJob>,
  signal?: AbortSignal,
): Promise<DeliveryAttempt<PushOutcome>> {
  const { sender, actions, tokens, throttle, receipts, log } = parts;
  const { wkIdentity, action, id } = job.data;
  const fields = { jobId: job.id, action, provider: sender.name, attempt: job.attemptsMade + 1 };
  const rule = actionTypeRule(action);
  if (!rule?.push) throw new UnrecoverableError('the action type has no push');

  // An acknowledged record is skipped before the throttle counts it: a skipped job draws on no budget.
  const skip =
    skipReason(await actions.readJson(wkIdentity), job.data, Date.now()) ??
    ((await receipts.acknowledged(wkIdentity, id, rule.side)) ? 'delivered' : undefined) ??
    (await throttle.check(wkIdentity, rule.side, job.id!));
  if (skip) {
    recordPushSkipped(skip);
    log.info('push skipped', { ...fields, reason: skip });
    return { result: { skipped: skip } };
  }
  const done = new Set(job.data.done);
  const pending = (await tokens.tokensFor(wkIdentity, rule.side)).filter((t) => !done.has(tokenDigest(t)));
  if (pending.length === 0) {
    if (done.size === 0) recordPushSkipped('no_tokens');
    log.info('push has no tokens to send to', fields);
    return { result: { sent: 0 } };
  }

  const notice = { action, ...rule.push, expiresAtMs: Date.parse(job.data.expiresAt) };
  const results = await Promise.allSettled(pending.map((token) => sender.send(token, notice, signal)));
  const outcome = tally(pending, results);
  if (outcome.removed.length > 0) await tokens.remove(wkIdentity, rule.side, outcome.removed);
  // A rate-limited job goes back to wait without spending an attempt, so its tokens are not given up.
  const lastAttempt =
    !signal?.aborted && !outcome.rateLimited && job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  const givenUp = lastAttempt ? outcome.retry : [];
  const finished = [...outcome.sent, ...outcome.removed, ...outcome.failed, ...givenUp];
  await job.updateData({ ...job.data, done: [...done, ...finished.map(tokenDigest)] });

  recordPushMessages('sent', outcome.sent.length);
  recordPushMessages('token_removed', outcome.removed.length);
  recordPushMessages('failed', outcome.failed.length + givenUp.length);
  log.info('push sent', {
    ...fields,
    tokens: pending.length,
    sent: outcome.sent.length,
    removed: outcome.removed.length,
    failed: outcome.failed.length + givenUp.length,
    retrying: outcome.retry.length - givenUp.length,
    ...(outcome.sent.length < pending.length ? { reasons: reasons(results) } : {}),
  });

  if (signal?.aborted) return { released: fields };
  if (outcome.rateLimited) {
    // FCM's quota is the project's: every worker pauses the queue for its Retry-After (or the backoff base),
    // and this job goes back to wait without spending an attempt.
    const waitMs = outcome.retryAfterMs ?? parts.retryBaseMs;
    log.warn('FCM rate limit: push queue paused', { ...fields, waitMs });
    return { rateLimitedMs: waitMs };
  }
  if (outcome.retry.length > 0) {
    // On the last attempt this fails the job for good, kept in the failed set for operators.
    throw new PushRetryError(`${outcome.retry.length} token(s) failed temporarily`, outcome.retryAfterMs);
  }
  return {
    result: { sent: outcome.sent.length, removed: outcome.removed.length, failed: outcome.failed.length },
  };
}
