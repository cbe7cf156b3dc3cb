import type { ActionRecord } from '../core/types.js';

/**
 * A push intent: the entry the action route appends to the intents stream (Keys.pushIntents) together with the
 * mailbox write, and the worker's intake turns into a job. The job's fields as XADD's field–value list.
 */
export function intentFields(
  record: Pick<ActionRecord, 'id' | 'wkIdentity' | 'action' | 'expiresAt'>,
): string[] {
  const { id, wkIdentity, action, expiresAt } = record;
  return ['id', id, 'wkIdentity', wkIdentity, 'action', action, 'expiresAt', expiresAt];
}
