import { socketMetrics } from './metrics.js';
import type { Side } from '../core/sides.js';
import type { ActionRecord, DeliveredEvent } from '../mailbox/index.js';
import type { RelayServer, RelaySocket } from './types.js';

/**
 * Ids of the records a connection was sent. A record reaches a connection by up to three ways (the live event,
 * the replay on join, the replay after a subscription gap) in any order; only the first one sends it, so the app
 * never prompts the user twice. Records are replaced within seconds and the replays send only the mailbox's
 * current one, so the last few ids are enough; the bound keeps a long-lived socket's memory flat.
 */
const REMEMBERED = 32;

export type Delivery = 'live' | 'replay';

/**
 * Sends `record` (`bytes` of stored JSON) to each of `sockets` (of one path) that did not have it yet, unless it
 * holds too much unread (it is then disconnected: see backlog.ts). The event is encoded once for all of them: a
 * large record is one string and one WebSocket frame in memory however many sockets it goes to. Returns how many
 * it went to.
 */
export function sendOnce(
  sockets: RelaySocket[],
  record: ActionRecord,
  bytes: number,
  delivery: Delivery,
): number {
  const { id } = record;
  const to = emitWithin(
    sockets.filter((socket) => !(socket.data.delivered?.has(id) ?? false)),
    bytes,
    record.action,
    record,
  );
  for (const socket of to) {
    const sent = (socket.data.delivered ??= new Set<string>());
    sent.add(id);
    if (sent.size > REMEMBERED) sent.delete(sent.values().next().value!);
    socketMetrics.emitted(record.action, delivery);
  }
  return to.length;
}

/**
 * Emits `event` (`bytes` of JSON) once for those of `sockets` (of one path) its backlog admits (backlog.ts): one
 * string and one WebSocket frame in memory however many sockets it goes to. Returns the sockets it went to.
 */
function emitWithin(sockets: RelaySocket[], bytes: number, event: string, data: object): RelaySocket[] {
  const admitted = sockets.filter((socket) => socket.data.backlogs.admit(socket, bytes));
  // Making room in the pod's bound may have disconnected sockets admitted before.
  const to = admitted.filter((socket) => socket.connected);
  if (to.length === 0) return to;
  to[0]!.nsp.local.to(to.map((socket) => socket.id)).emit(event, data);
  for (const socket of to) socket.data.backlogs.sent(socket);
  return to;
}

/** The sockets of a pair's room on this pod. */
function roomSockets(io: RelayServer, wkIdentity: string): RelaySocket[] {
  const ids = io.sockets.adapter.rooms.get(wkIdentity);
  if (!ids) return [];
  const sockets: RelaySocket[] = [];
  for (const id of ids) {
    const socket = io.sockets.sockets.get(id);
    if (socket) sockets.push(socket);
  }
  return sockets;
}

/**
 * Delivers `record` (`bytes` of stored JSON) to every socket of its room on this pod that did not have it yet: at
 * once to plain sockets, in offset order to the sockets that joined with a position (stream-cursor.ts).
 */
export function deliverToRoom(
  io: RelayServer,
  record: ActionRecord,
  bytes: number,
  delivery: Delivery,
): void {
  const room = record.wkIdentity;
  const plain: RelaySocket[] = [];
  for (const socket of roomSockets(io, room)) {
    const cursor = record.offset === undefined ? undefined : socket.data.cursors?.get(room);
    if (cursor) cursor.offer(record, bytes);
    else plain.push(socket);
  }
  sendOnce(plain, record, bytes, delivery);
}

/**
 * Sends a receipt's `delivered` event to the stream sockets of its room on this pod (`io`: the sender side's path);
 * plain sockets never get one.
 */
export function deliverReceipt(io: RelayServer, event: DeliveredEvent): void {
  socketMetrics.receiptsEmitted(sendToStreamSockets(io, event.wkIdentity, 'delivered', event));
}

/** The `presence` event's data (docs/api.md#presence). */
export interface PresenceChange {
  wkIdentity: string;
  side: Side;
  connected: boolean;
  lastSeen: string | null;
}

/**
 * Sends an event of the pair's stream (not a record) to the sockets of `room` on this pod that joined it with a
 * position; plain sockets never get one. Within the pod's bound on unread bytes, as records are. Returns how many
 * it went to.
 */
export function sendToStreamSockets(io: RelayServer, room: string, event: string, data: object): number {
  const streamSockets = roomSockets(io, room).filter((socket) => socket.data.cursors?.has(room) ?? false);
  return emitWithin(streamSockets, Buffer.byteLength(JSON.stringify(data)), event, data).length;
}
