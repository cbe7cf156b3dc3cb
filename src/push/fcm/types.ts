/** What a push says: the type and its generic text, and until when it is worth delivering. */
export interface PushNotice {
  action: string;
  title: string;
  body: string;
  /** The action's expiry (ms since the epoch): the push must not outlive it. */
  expiresAtMs: number;
}

/**
 * One token's outcome, in terms the worker acts on: `remove` drops the token from its pair for good, `retry` sends
 * to it again on the job's next attempt (after `retryAfterMs` at the least; `rateLimited`: the provider asked the
 * whole sender to slow down), `failed` gives up on it for this push.
 * Reasons name codes only, never a provider's message (it may echo what was sent).
 */
export type PushResult =
  | { outcome: 'sent' }
  | { outcome: 'remove'; reason: string }
  | { outcome: 'failed'; reason: string }
  | { outcome: 'retry'; reason: string; retryAfterMs?: number; rateLimited?: boolean };

export interface PushSender {
  readonly name: string;
  send(token: string, notice: PushNotice, signal?: AbortSignal): Promise<PushResult>;
}
