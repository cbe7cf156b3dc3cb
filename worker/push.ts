import { Queue, UnrecoverableError, Worker, type Job, type MinimalJob } from 'bullmq';
import { actionTypeRule } from '../src/mailbox/index.js';
import type { Config } from '../src/core/config/config.js';
import { errorFields, type Logger } from '../src/core/log.js';
import { recordPushMessages, recordPushSkipped } from '../src/core/metrics.js';
import { createPushSender, type PushResult } from '../src/push/fcm/index.js';
import { logBullErrors } from '../src/core/queue/bull-errors.js';
import { queuePrefix } from '../src/core/queue/prefix.js';
import { PUSH_BACKOFF, PUSH_QUEUE, pushJobOptions, tokenDigest, type PushJob } from '../src/push/index.js';
import { createRedis } from '../src/core/redis/clients.js';
import type { RoleHandle } from '../src/core/role.js';
import { ActionStore } from '../src/mailbox/index.js';
import { keysFor } from '../src/core/redis/keys.js';
import { PushThrottle } from '../src/push/index.js';
import { TokenStore } from '../src/push/index.js';
import { WriteAck } from '../src/core/redis/write-ack.js';
import type { ActionRecord } from '../src/core/types.js';
import { releaseAtShutdown, runQueueWorker } from './bullmq.js';
import { PushIntake } from './push-intake.js';

/** Pushes wait on the network, not the CPU: several jobs at a time keep a burst of actions moving. */
const CONCURRENCY = 8;
/**
 * A ceiling on push jobs per second for all workers together, far below FCM's quota. It is also what makes
 * BullMQ honour a manual rate limit (queue.rateLimit after a 429) across every worker of the queue.
 */
const LIMITER = { max: 500, duration: 1000 };

type SkipReason = 'superseded' | 'expired' | 'throttled';

/** Some tokens failed temporarily; the job's next attempt sends to those only, no sooner than `retryAfterMs`. */
class PushRetryError extends Error {
  override name = 'PushRetryError';
  constructor(
    message: string,
    readonly retryAfterMs: number | undefined,
  ) {
    super(message);
  }
}

/**
 * Exponential backoff with jitter (half to all of base·2ⁿ, the base stored on the job by the push intake below), stretched to
 * the provider's Retry-After when it asked for a longer pause.
 */
function pushBackoff(attemptsMade: number, _type?: string, err?: Error, job?: MinimalJob): number {
  const backoff = job?.opts.backoff;
  const baseMs = typeof backoff === 'object' ? (backoff.delay ?? 0) : (backoff ?? 0);
  const exponential = baseMs * 2 ** Math.max(0, attemptsMade - 1) * (0.5 + Math.random() / 2);
  const asked = err instanceof PushRetryError ? (err.retryAfterMs ?? 0) : 0;
  return Math.round(Math.max(exponential, asked));
}

/** The job is about one stored record: once the mailbox holds another one (the reply came) or none, it is moot. */
function skipReason(stored: string | null, job: PushJob, nowMs: number): SkipReason | undefined {
  if (Date.parse(job.expiresAt) <= nowMs) return 'expired';
  if (stored === null) return 'expired';
  return (JSON.parse(stored) as ActionRecord).id === job.id ? undefined : 'superseded';
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

/**
 * Sends the push of one stored action to the pair's tokens of the action's side (docs/api.md#what-a-push-carries). Progress is kept in
 * the job (`done`), so an attempt after a temporary failure goes to the failed tokens only; refused tokens leave
 * the pair at once.
 */
export async function startPushWorker(config: Config, log: Logger): Promise<RoleHandle> {
  const sender = createPushSender(config.push);
  const keys = keysFor(config.keyPrefix);
  const storeRedis = createRedis(config.redis.topology, 'store');
  const ack = WriteAck.open(config.redis, keys);
  const actions = new ActionStore(storeRedis, keys, config.action.ttlSeconds, ack);
  const tokens = new TokenStore(storeRedis, keys, ack);
  const throttle = new PushThrottle(storeRedis, keys, config.pushPerPairPerMinute, config.action.ttlSeconds);
  const redis = createRedis(config.redis.topology, 'worker');
  const prefix = queuePrefix(config.keyPrefix, PUSH_QUEUE);
  // For the queue-depth metric, rateLimit() and the intake's jobs.
  const queue = new Queue(PUSH_QUEUE, { connection: redis, prefix, skipVersionCheck: true });
  logBullErrors(queue, 'push queue', log);

  const push = async (job: Job<PushJob>, lockToken?: string, signal?: AbortSignal) => {
    const { wkIdentity, action } = job.data;
    const fields = { jobId: job.id, action, provider: sender.name, attempt: job.attemptsMade + 1 };
    const rule = actionTypeRule(action);
    if (!rule?.push) throw new UnrecoverableError('the action type has no push');

    const skip =
      skipReason(await actions.readJson(wkIdentity), job.data, Date.now()) ??
      (await throttle.check(wkIdentity, rule.side, job.id!));
    if (skip) {
      recordPushSkipped(skip);
      log.info('push skipped', { ...fields, reason: skip });
      return { skipped: skip };
    }
    const done = new Set(job.data.done);
    const pending = (await tokens.tokensFor(wkIdentity, rule.side)).filter((t) => !done.has(tokenDigest(t)));
    if (pending.length === 0) {
      if (done.size === 0) recordPushSkipped('no_tokens');
      log.info('push has no tokens to send to', fields);
      return { sent: 0 };
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

    if (signal?.aborted) throw await releaseAtShutdown(job, lockToken, log, fields);
    if (outcome.rateLimited) {
      // FCM's quota is the project's: every worker pauses the queue for its Retry-After (or the backoff base),
      // and this job goes back to wait without spending an attempt.
      const waitMs = outcome.retryAfterMs ?? config.push.retryBaseMs;
      log.warn('FCM rate limit: push queue paused', { ...fields, waitMs });
      await queue.rateLimit(waitMs);
      throw Worker.RateLimitError();
    }
    if (outcome.retry.length > 0) {
      // On the last attempt this fails the job for good, kept in the failed set for operators.
      throw new PushRetryError(`${outcome.retry.length} token(s) failed temporarily`, outcome.retryAfterMs);
    }
    return { sent: outcome.sent.length, removed: outcome.removed.length, failed: outcome.failed.length };
  };

  const worker = new Worker<PushJob>(PUSH_QUEUE, push, {
    connection: redis,
    prefix,
    concurrency: CONCURRENCY,
    limiter: LIMITER,
    settings: { backoffStrategy: pushBackoff },
  });
  log.info('push worker started', { queue: PUSH_QUEUE, provider: sender.name, backoff: PUSH_BACKOFF });
  if (sender.name === 'log') log.warn('PUSH_PROVIDER=log: push notifications reach no device');
  const intake = new PushIntake({
    redis: createRedis(config.redis.topology, 'worker'),
    keys,
    queue,
    jobOptions: pushJobOptions(config.push, config.action.ttlSeconds),
    claimIdleMs: config.push.intakeClaimMs,
    livenessIntervalMs: config.redis.livenessIntervalMs,
    log,
  });
  intake.start();
  const jobs = runQueueWorker(
    {
      worker,
      queue,
      describe: (job) => ({ action: job.data.action }),
      connections: [storeRedis, redis],
      graceMs: config.shutdownTimeoutMs,
    },
    log,
  );
  return {
    async stop() {
      await intake.stop();
      await jobs.stop();
      await ack.close();
    },
  };
}
