/**
 * A push intent: the entry the action route appends to the intents stream (Keys.pushIntents) together with the
 * mailbox write, and the worker's intake turns into a job. It names the stored record a push is about.
 */
export interface PushIntent {
  /** The id of the record it is about. */
  id: string;
  wkIdentity: string;
  action: string;
  expiresAt: string;
  /** When the record was stored; absent from the intents of a relay that did not write it. */
  createdAt?: string;
}

const FIELDS = ['id', 'wkIdentity', 'action', 'expiresAt', 'createdAt'] as const;

/**
 * A record id as newRecordId makes them. Checked because it becomes the job id, and an id BullMQ refuses would
 * fail the intake's whole batch on every try.
 */
const RECORD_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The intent's fields as XADD's field–value list. */
export function encodeIntent(record: Required<PushIntent>): string[] {
  return FIELDS.flatMap((field) => [field, record[field]]);
}

/** The intent an entry holds, or undefined for an entry that is no intent (deleted, or not written by the relay). */
export function decodeIntent(fields: readonly string[] | null): PushIntent | undefined {
  if (!fields) return undefined;
  const field = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) field.set(fields[i]!, fields[i + 1]!);
  const [id, wkIdentity, action, expiresAt, createdAt] = FIELDS.map((f) => field.get(f));
  if (!id || !RECORD_ID.test(id) || !wkIdentity || !action || !expiresAt) return undefined;
  if (Number.isNaN(Date.parse(expiresAt))) return undefined;
  if (createdAt === undefined) return { id, wkIdentity, action, expiresAt };
  return Number.isNaN(Date.parse(createdAt)) ? undefined : { id, wkIdentity, action, expiresAt, createdAt };
}
