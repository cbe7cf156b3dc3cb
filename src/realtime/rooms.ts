import type { RateLimiterRedis } from 'rate-limiter-flexible';
import type { Side } from '../action-types.js';
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

async function join(socket: RelaySocket, data: unknown, deps: RoomDeps): Promise<void> {
  const wkIdentity = roomOf(data);
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
  await socket.join(wkIdentity);
  await deps.replay?.toSocket(socket, wkIdentity);
  // Counted once the join is fully handled, replay included.
  socketMetrics.joined(deps.side, 'joined');
}
