import { socketMetrics } from '../metrics.js';
import type { ActionRecord } from '../types.js';
import type { RelayServer, RelaySocket } from './types.js';

/**
 * Ids of the records a connection was sent. A record reaches a connection by up to three ways (the live event,
 * the replay on join, the replay after an adapter gap) in any order; only the first one sends it, so the app
 * never prompts the user twice. Records are replaced within seconds and the replays send only the mailbox's
 * current one, so the last few ids are enough; the bound keeps a long-lived socket's memory flat.
 */
const REMEMBERED = 32;

export type Delivery = 'live' | 'replay';

/** Sends `record` to this connection unless it already had it; true when sent. */
export function sendOnce(socket: RelaySocket, record: ActionRecord, delivery: Delivery): boolean {
  const sent = (socket.data.delivered ??= new Set<string>());
  // Records stored by the previous release (until their TTL after an upgrade) have no id.
  const id = record.id ?? `${record.createdAt}\n${record.action}`;
  if (sent.has(id)) return false;
  sent.add(id);
  if (sent.size > REMEMBERED) sent.delete(sent.values().next().value!);
  socket.emit(record.action, record);
  socketMetrics.emitted(record.action, delivery);
  return true;
}

/** The sockets of a pair's room on this pod. */
export function roomSockets(io: RelayServer, wkIdentity: string): RelaySocket[] {
  const ids = io.sockets.adapter.rooms.get(wkIdentity);
  if (!ids) return [];
  const sockets: RelaySocket[] = [];
  for (const id of ids) {
    const socket = io.sockets.sockets.get(id);
    if (socket) sockets.push(socket);
  }
  return sockets;
}

/** Delivers `record` to every socket of its room on this pod that did not have it yet. */
export function deliverToRoom(io: RelayServer, record: ActionRecord, delivery: Delivery): void {
  for (const socket of roomSockets(io, record.wkIdentity)) sendOnce(socket, record, delivery);
}
