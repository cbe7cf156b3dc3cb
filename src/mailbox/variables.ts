import { int, string } from '../core/config/parsers.js';
import { API, BOTH, optional, variable, type ValuesOf } from '../core/config/variables.js';

/**
 * The mailbox's variables: the operator's action types (read by src/config.ts), the record's lifetime and what
 * each direction's stream keeps.
 */
export const MAILBOX_VARIABLES = {
  ACTION_TYPES_EXTRA: optional(string, {
    roles: BOTH,
    doc: 'JSON array of action types added to the table (docs/api.md#action-types); API pods and workers',
  }),
  ACTION_TTL_SECONDS: variable(int(1, 86_400), 900, {
    roles: BOTH,
    doc: 'action record lifetime, from its POST',
  }),
  STREAM_LENGTH: variable(int(1, 300), 16, {
    roles: BOTH,
    doc: 'records kept per pair and direction for resuming clients (docs/api.md#the-pairs-stream)',
  }),
  STREAM_MAX_BYTES: variable(int(65_536, 1024 * 1024 * 1024), 2_097_152, {
    roles: BOTH,
    shown: '`2097152` (2 MiB)',
    doc: 'record bytes kept per pair and direction; the newest record is always kept',
  }),
  STREAM_META_TTL_SECONDS: variable(int('ACTION_TTL_SECONDS', 2_592_000), 86_400, {
    roles: BOTH,
    doc: "how long a direction's epoch and last offset outlive its last record (at least `ACTION_TTL_SECONDS`)",
  }),
  LONGPOLL_PER_IP: variable(int(0, 10_000), 10, {
    roles: API,
    doc: 'stream reads held at once per client address on one API pod; one more is answered at once (0: never hold; docs/api.md#stream-read-and-long-poll)',
  }),
};

export function mailboxSettings(v: ValuesOf<typeof MAILBOX_VARIABLES>) {
  return {
    action: { ttlSeconds: v.ACTION_TTL_SECONDS },
    stream: {
      length: v.STREAM_LENGTH,
      maxBytes: v.STREAM_MAX_BYTES,
      metaTtlSeconds: v.STREAM_META_TTL_SECONDS,
    },
    longPoll: { perIp: v.LONGPOLL_PER_IP },
  };
}
export type MailboxConfig = ReturnType<typeof mailboxSettings>;
export type StreamSettings = MailboxConfig['stream'];
