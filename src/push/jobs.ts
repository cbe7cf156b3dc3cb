import { createHash } from 'node:crypto';
import type { JobsOptions } from 'bullmq';
import type { PushConfig } from './variables.js';
import { KEEP_FAILED_SECONDS } from '../core/queue/prefix.js';
import type { PushIntent } from './intent.js';

/** BullMQ queue of push notifications; its keys are `<KEY_PREFIX>{bull:push}:push:…` (see queuePrefix). */
export const PUSH_QUEUE = 'push';

/** The backoff type the push worker implements (exponential with jitter, stretched to a provider's Retry-After). */
export const PUSH_BACKOFF = 'push';

/**
 * A job names the stored record it is about, not its contents: the worker re-reads the mailbox and sends only
 * while this very record is still there. `done` holds hashes of the tokens already dealt with (sent, removed or
 * failed for good), so a retry goes only to the tokens that failed temporarily.
 */
export interface PushJob extends PushIntent {
  done: string[];
}

/**
 * Same stored record, same job id: a repeated intent finds the job already there and sends nothing twice, and
 * two records, however close in time, are two jobs. Record ids are base64url, which BullMQ ids may hold.
 */
export function pushJobId(record: Pick<PushIntent, 'id'>): string {
  return `push-${record.id}`;
}

/** How a token is remembered in job data (`done`): never the token itself, job data is visible to operators. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

/**
 * A completed job is the dedupe record for as long as its action can live; after that no intent can name the
 * same record again (the intake drops expired ones).
 */
export function pushJobOptions(
  push: Pick<PushConfig, 'maxAttempts' | 'retryBaseMs'>,
  actionTtlSeconds: number,
): JobsOptions {
  return {
    attempts: push.maxAttempts,
    backoff: { type: PUSH_BACKOFF, delay: push.retryBaseMs },
    removeOnComplete: { age: actionTtlSeconds },
    removeOnFail: { age: KEEP_FAILED_SECONDS },
  };
}
