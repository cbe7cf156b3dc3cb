import { int, string } from '../core/config/parsers.js';
import { BOTH, optional, variable, type ValuesOf } from '../core/config/variables.js';

/** The mailbox's variables: the operator's action types (read by src/config.ts) and the record's lifetime. */
export const MAILBOX_VARIABLES = {
  ACTION_TYPES_EXTRA: optional(string, {
    roles: BOTH,
    doc: 'JSON array of action types added to the table (docs/api.md#action-types); API pods and workers',
  }),
  ACTION_TTL_SECONDS: variable(int(1, 86_400), 900, {
    roles: BOTH,
    doc: 'action record lifetime, from its POST',
  }),
};

export function mailboxSettings(v: ValuesOf<typeof MAILBOX_VARIABLES>) {
  return { action: { ttlSeconds: v.ACTION_TTL_SECONDS } };
}
export type MailboxConfig = ReturnType<typeof mailboxSettings>;
