import { int, oneOf, string, url } from '../core/config/parsers.js';
import { API, WORKER, optional, variable, type ValuesOf } from '../core/config/variables.js';

/** The push's variables: budgets of pushes and token registrations, and how the worker sends. */
export const PUSH_VARIABLES = {
  PUSH_PER_PAIR_PER_MINUTE: variable(int(1, 1_000_000), 6, {
    roles: API,
    doc: 'pushes per pair and side per minute; past it the action is stored and emitted, the push skipped',
  }),
  TOKEN_REGISTRATIONS_PER_HOUR: variable(int(1, 1_000_000), 20, {
    roles: API,
    doc: '`POST /v1/token` registrations per pair and side per hour',
  }),
  TOKEN_REGISTRATIONS_PER_ADDRESS_PER_DAY: variable(int(1, 1_000_000_000), 1000, {
    roles: API,
    doc: 'token registrations (one per side, `keyToken` of a sync included) per client IP per day',
  }),
  PUSH_PROVIDER: variable(oneOf(['fcm', 'log']), 'log', {
    roles: WORKER,
    doc: '`fcm` or `log` (development: the worker logs the action type and token count, sends nothing)',
  }),
  FCM_SERVICE_ACCOUNT_FILE: optional(string, {
    roles: WORKER,
    requiredWhen: ['PUSH_PROVIDER', 'fcm'],
    doc: 'Google service-account JSON key; required with `fcm`, read and checked when the worker starts',
  }),
  FCM_API_URL: variable(url(), 'https://fcm.googleapis.com', { roles: WORKER, doc: 'FCM HTTP v1 base URL' }),
  PUSH_TIMEOUT_MS: variable(int(100, 60_000), 10_000, {
    roles: WORKER,
    doc: 'one FCM or token-endpoint call (worker)',
  }),
  PUSH_RETRY_BASE_MS: variable(int(10, 600_000), 2_000, {
    roles: WORKER,
    doc: "push retry backoff base and attempts; stored on each job by the worker's intake",
  }),
  PUSH_MAX_ATTEMPTS: variable(int(1, 100), 8, { roles: WORKER }),
  PUSH_ACK_GRACE_MS: variable(int(0, 10_000), 1_500, {
    roles: WORKER,
    doc: 'how long a push waits for an ack when the target side has an ack-capable socket (0: never wait)',
  }),
  PUSH_INTAKE_CLAIM_MS: variable(int(100, 3_600_000), 30_000, {
    roles: WORKER,
    doc: 'push intents a worker took and never queued (it died) are taken over by another worker after this long',
  }),
};

export function pushSettings(v: ValuesOf<typeof PUSH_VARIABLES>) {
  return {
    push: {
      perPairPerMinute: v.PUSH_PER_PAIR_PER_MINUTE,
      registrations: {
        perHour: v.TOKEN_REGISTRATIONS_PER_HOUR,
        perAddressPerDay: v.TOKEN_REGISTRATIONS_PER_ADDRESS_PER_DAY,
      },
      provider: v.PUSH_PROVIDER,
      fcmApiUrl: v.FCM_API_URL,
      timeoutMs: v.PUSH_TIMEOUT_MS,
      retryBaseMs: v.PUSH_RETRY_BASE_MS,
      maxAttempts: v.PUSH_MAX_ATTEMPTS,
      intakeClaimMs: v.PUSH_INTAKE_CLAIM_MS,
      ackGraceMs: v.PUSH_ACK_GRACE_MS,
    },
  };
}

export type PushConfig = ReturnType<typeof pushSettings>['push'];
