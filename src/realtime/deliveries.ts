import { actionTypeRule } from '../action-types.js';
import type { ActionRecord } from '../types.js';
import type { RelaySocket } from './types.js';

/**
 * A pair's mailbox holds one record, replaced by each POST, so a socket needs only its last few deliveries to
 * tell whether a replay would repeat one; the bound keeps a long-lived socket's memory flat.
 */
const REMEMBERED = 8;

const keyOf = (record: ActionRecord) => `${record.wkIdentity}\n${record.createdAt}\n${record.action}`;

function isActionRecord(event: string, data: unknown): data is ActionRecord {
  return actionTypeRule(event) !== undefined && typeof data === 'object' && data !== null;
}

/**
 * Remembers every action record this socket is sent, live (room broadcasts, from any pod) or replayed: the
 * outgoing hook sees both, so a replay after a live event, or a second join, never prompts the user twice.
 */
export function trackDeliveries(socket: RelaySocket): void {
  const delivered = new Set<string>();
  socket.data.delivered = delivered;
  socket.onAnyOutgoing((event: string, data: unknown) => {
    if (!isActionRecord(event, data)) return;
    delivered.add(keyOf(data));
    if (delivered.size > REMEMBERED) delivered.delete(delivered.values().next().value!);
  });
}

export function wasDelivered(socket: RelaySocket, record: ActionRecord): boolean {
  return socket.data.delivered?.has(keyOf(record)) ?? false;
}
