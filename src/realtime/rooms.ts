import type { RateLimiterRedis } from 'rate-limiter-flexible';
import type { Side } from '../action-types.js';
import type { AuthGate } from '../auth/gate.js';
import { validator } from '../http/validate.js';
import { errorFields, type Logger } from '../log.js';
import { socketMetrics } from '../metrics.js';
import { roomEvent } from '../schemas/socket.js';
import type { Replay } from './replay.js';
import type { RelaySocket } from './types.js';

const parseRoomEvent = validator<{ wkIdentity: string }>('event', roomEvent);

export interface RoomDeps {
  side: Side;
  /** Per-IP join budget shared by every pod through Redis. */
  joins: RateLimiterRedis;
  /** Set on the paths whose action types the table replays. */
  replay: Replay | undefined;
  log: Logger;
  /** Checks a join's identity signature (and the mode, pins) as for HTTP writes. */
  auth: AuthGate;
  /** Pair rooms one socket may be in: a socket watching many pairs is disconnected. */
  roomsMax: number;
}

/** A room per pair: its wkIdentity. Anything the socket sends but `join` and `leave` has no listener: ignored. */
export function handleRooms(socket: RelaySocket, deps: RoomDeps): void {
  socket.on('join', (data: unknown) => {
    join(socket, data, deps).catch((err: unknown) => deps.log.error('socket join failed', errorFields(err)));
  });
  socket.on('leave', (data: unknown) => {
    // A bad leave has nothing to undo; only a bad join is worth disconnecting for (docs/api.md#join-and-leave).
    const wkIdentity = roomOf(data);
    if (wkIdentity !== undefined) void socket.leave(wkIdentity);
  });
}

function roomOf(data: unknown): string | undefined {
  try {
    return parseRoomEvent(data).wkIdentity;
  } catch {
    return undefined;
  }
}

/** The join's data as later steps see it (credential removed), or undefined when the gate refused it. */
async function admitted(data: unknown, deps: RoomDeps): Promise<unknown> {
  // Not an object: nothing to check, and roomOf refuses it next.
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return data;
  try {
    const admitted = await deps.auth.admit({
      route: 'join',
      location: 'event',
      body: data as Record<string, unknown>,
      side: deps.side,
      log: deps.log,
    });
    return admitted.body;
  } catch {
    // Refusals are logged and counted by the gate; Redis away refuses too (fail closed).
    return undefined;
  }
}

async function join(socket: RelaySocket, data: unknown, deps: RoomDeps): Promise<void> {
  const fields = await admitted(data, deps);
  if (fields === undefined) {
    socketMetrics.joined(deps.side, 'unauthorized');
    socket.disconnect(true);
    return;
  }
  const wkIdentity = roomOf(fields);
  if (wkIdentity === undefined) {
    socketMetrics.joined(deps.side, 'invalid');
    socket.disconnect(true);
    return;
  }
  try {
    await deps.joins.consume(socket.data.ip);
  } catch (err) {
    // Rejections are the budget's answer; a real error (there is an in-memory fallback) still refuses the join.
    if (err instanceof Error) deps.log.warn('socket join limiter failed', errorFields(err));
    socketMetrics.joined(deps.side, 'rate_limited');
    socket.disconnect(true);
    return;
  }
  // A socket that left while its join waited for Redis must not be added to a room it would never leave.
  if (!socket.connected) return;
  // socket.rooms holds the socket's own id besides the pair rooms.
  if (!socket.rooms.has(wkIdentity) && socket.rooms.size - 1 >= deps.roomsMax) {
    socketMetrics.joined(deps.side, 'too_many_rooms');
    socket.disconnect(true);
    return;
  }
  await socket.join(wkIdentity);
  await deps.replay?.toSocket(socket, wkIdentity);
  // Counted once the join is fully handled, replay included.
  socketMetrics.joined(deps.side, 'joined');
}
