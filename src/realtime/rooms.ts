import type { RateLimiterRedis } from 'rate-limiter-flexible';
import type { Side } from '../core/sides.js';
import type { AuthGate } from '../identity/index.js';
import { AppError, type ErrorCode } from '../core/errors.js';
import { validator } from '../core/validation/validate.js';
import { errorFields, type Logger } from '../core/log.js';
import { socketMetrics } from './metrics.js';
import { isRedisUnavailable } from '../core/redis/clients.js';
import { settlesWithin } from '../core/role.js';
import { joinEvent, roomEvent } from './socket-schema.js';
import type { Replay } from './replay.js';
import {
  ackMetrics,
  ackParams,
  streamMetrics,
  type AckResult,
  type StreamPosition,
} from '../mailbox/index.js';
import {
  checkPosition,
  StreamCursor,
  type CursorDeps,
  type PositionCheck,
  type StreamReader,
} from './stream-cursor.js';
import { closeTransport } from './transport.js';
import { otherSide, type Presence, type SidePresence } from './presence.js';
import type { RelaySocket } from './types.js';

const parseRoomEvent = validator<{ wkIdentity: string }>('event', roomEvent);
const parseJoinEvent = validator<{ wkIdentity: string; since?: StreamPosition }>('event', joinEvent);
const parseAckEvent = validator<{ wkIdentity: string; id: string }>('event', ackParams);

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
  /** Resolves once records stored for the room on any pod reach this one (room-channels.ts). */
  listening(room: string): Promise<unknown>;
  /** The room's stream of this path's direction, for joins with a position. */
  readStream: StreamReader;
  /** Whether a position delivered in the room's direction was lost; draws a new epoch then. */
  positionLost: PositionCheck;
  /**
   * Acknowledges a record of the room in this path's direction (the socket was checked), spending one point of
   * the `client`'s join budget in the same script.
   */
  acknowledge(room: string, id: string, client: string): Promise<AckResult>;
  /** AUTH_ROUTES says `ack=off`: every joined socket is authenticated for its side. */
  acksUnchecked: boolean;
  /** The position of the room's stream of this path's direction, for the answer of a join without one. */
  position(room: string): Promise<Position>;
  /** Counts the path's sockets per room, and tells a join of the other side's. */
  presence: Presence;
}

interface Position {
  epoch: string | null;
  offset: number;
}

/** How long a join waits for its room's channel before the client is told to come back (UNAVAILABLE). */
const LISTEN_WAIT_MS = 2000;

/**
 * A room per pair: its wkIdentity. Anything the socket sends but `join`, `leave` and `ack` has no listener: ignored.
 *
 * A socket's room operations run one after another in the order they arrived: a `join` waits for the identity
 * check and the Redis join budget, and a `leave` sent right after it must not overtake it (the join would then
 * add the socket to a room the app believes it left). An `ack` waits for the room operations sent before it.
 *
 * One pair of listeners serves every socket of a path (the socket is their `this`), and a socket holds a queue
 * only while an operation of it is under way.
 */
export class RoomEvents {
  /** The last operation queued by each socket with one under way. */
  private readonly queues = new Map<RelaySocket, Promise<void>>();
  private readonly onJoin: (this: RelaySocket, data: unknown, ack?: unknown) => void;
  private readonly onLeave: (this: RelaySocket, data: unknown) => void;
  private readonly onAck: (this: RelaySocket, data: unknown, ack?: unknown) => void;
  private readonly onDisconnect: (this: RelaySocket) => void;

  constructor(private readonly deps: RoomDeps) {
    const inOrder = this.inOrder.bind(this);
    this.onJoin = function (data, ack) {
      const asked = typeof ack === 'function';
      inOrder(this, async () => answer(this, await join(this, data, deps, asked), deps.side, ack), 'join');
    };
    this.onLeave = function (data) {
      inOrder(this, () => leave(this, data, deps), 'leave');
    };
    // After the operations under way: a join still counting the socket is counted before it is uncounted.
    this.onDisconnect = function () {
      stopCursors(this);
      inOrder(this, () => deps.presence.disconnected(this), 'disconnect');
    };
    const afterRoomOperations = this.afterRoomOperations.bind(this);
    this.onAck = function (data, reply) {
      const answer = typeof reply === 'function' ? (reply as (answer: AckAnswer) => void) : () => {};
      afterRoomOperations(this, async () => answer(await acknowledged(this, data, deps)));
    };
  }

  /** Listens for the socket's `join`, `leave` and `ack`. */
  handle(socket: RelaySocket): void {
    socket.on('join', this.onJoin);
    socket.on('leave', this.onLeave);
    socket.on('ack', this.onAck);
    socket.on('disconnect', this.onDisconnect);
  }

  /** Runs an ack once the room operations sent before it are done; acks do not wait for each other. */
  private afterRoomOperations(socket: RelaySocket, operation: () => Promise<void>): void {
    void (this.queues.get(socket) ?? Promise.resolve())
      .then(operation)
      .catch((err: unknown) => this.deps.log.error('socket ack failed', errorFields(err)));
  }

  private inOrder(socket: RelaySocket, operation: () => Promise<void>, what: string): void {
    const queued = (this.queues.get(socket) ?? Promise.resolve())
      .then(operation)
      .catch((err: unknown) => this.deps.log.error(`socket ${what} failed`, errorFields(err)));
    this.queues.set(socket, queued);
    void queued.then(() => {
      if (this.queues.get(socket) === queued) this.queues.delete(socket);
    });
  }
}

/** Where a join with a position left the socket: see StreamRead and docs/api.md#resuming-the-stream. */
interface Resumed {
  recovered: boolean;
  epoch: string | null;
  offset: number;
  /** Records this join sent. */
  replayed: number;
}

/** A join that succeeded, as the client is told (when it asked): the stream's position and the other side's presence. */
type Joined = (Position | Resumed) & { peer: SidePresence };

/** What the client is told of its join (socket.io's acknowledgement, when it asked for one). */
export type JoinAnswer = { ok: true } | ({ ok: true } & Joined) | { ok: false; code: ErrorCode };

/**
 * A refused join: the metric's outcome, the code the acknowledgement names (as HTTP would), and whether the
 * client may come back (only the transport closes, so it reconnects and joins again) or is disconnected.
 */
interface Refused {
  outcome: 'invalid' | 'unauthorized' | 'rate_limited' | 'too_many_rooms' | 'unavailable';
  code: ErrorCode;
}

/**
 * Acknowledges the join, then, for a refusal, closes. engine.io sends what it buffered before it closes, so the
 * acknowledgement reaches the client before the disconnect (a closed transport, for Redis failing, drops it:
 * that client reconnects anyway).
 */
function answer(socket: RelaySocket, outcome: Refused | Joined | undefined, side: Side, ack: unknown): void {
  const reply = typeof ack === 'function' ? (ack as (answer: JoinAnswer) => void) : () => {};
  if (outcome === undefined) return reply({ ok: true });
  if (!('outcome' in outcome)) return reply({ ok: true, ...outcome });
  const refused = outcome;
  socketMetrics.joined(side, refused.outcome);
  if (!socket.connected) return;
  reply({ ok: false, code: refused.code });
  if (refused.outcome === 'unavailable') closeTransport(socket);
  else socket.disconnect(true);
}

/** The event's data as `parse` reads it, or undefined when it is not of that shape. */
function shaped<T>(parse: (data: unknown) => T, data: unknown): T | undefined {
  try {
    return parse(data);
  } catch {
    return undefined;
  }
}

const roomOf = (data: unknown) => shaped(parseRoomEvent, data)?.wkIdentity;

/** The socket disconnected: its cursors stop. */
function stopCursors(socket: RelaySocket): void {
  for (const cursor of socket.data.cursors?.values() ?? []) cursor.stop();
  socket.data.cursors = undefined;
  socket.data.authenticated = undefined;
}

/** The socket is a plain socket of `room` from now on (a leave, or a join without a position). */
function dropCursor(socket: RelaySocket, room: string): void {
  socket.data.cursors?.get(room)?.stop();
  socket.data.cursors?.delete(room);
}

/**
 * The join's data as later steps see it (credential removed) and whether it was verified (a signature or a session
 * token), or why the gate refused it (UNAVAILABLE: Redis could not answer it: nonce, pin).
 */
async function admitted(
  data: unknown,
  deps: RoomDeps,
): Promise<{ fields: unknown; verified: boolean } | Refused> {
  // Not an object: nothing to check, and roomOf refuses it next.
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    return { fields: data, verified: false };
  const { token, ...fields } = data as Record<string, unknown>;
  try {
    const admitted = await deps.auth.admit({
      route: 'join',
      location: 'event',
      body: fields,
      side: deps.side,
      // Not a string: a malformed token, refused as one.
      ...(Object.hasOwn(data, 'token') ? { token: typeof token === 'string' ? token : '' } : {}),
      log: deps.log,
    });
    return { fields: admitted.body, verified: admitted.verified };
  } catch (err) {
    // Refusals are logged and counted by the gate; Redis failing reaches here raw or as a 503.
    const unavailable = err instanceof AppError ? err.code === 'UNAVAILABLE' : isRedisUnavailable(err);
    if (unavailable) return UNAVAILABLE;
    return { outcome: 'unauthorized', code: err instanceof AppError ? err.code : 'AUTH_INVALID' };
  }
}

/**
 * Redis failed while the join was handled: only the transport is closed, so the client reconnects and sends its
 * join again (after `io server disconnect` socket.io-client would never reconnect).
 */
const UNAVAILABLE: Refused = { outcome: 'unavailable', code: 'UNAVAILABLE' };

async function leave(socket: RelaySocket, data: unknown, deps: RoomDeps): Promise<void> {
  // A bad leave has nothing to undo; only a bad join is worth disconnecting for (docs/api.md#join-and-leave).
  const wkIdentity = roomOf(data);
  if (wkIdentity === undefined) return;
  dropCursor(socket, wkIdentity);
  socket.data.authenticated?.delete(wkIdentity);
  await socket.leave(wkIdentity);
  await deps.presence.left(socket, wkIdentity);
}

/**
 * Identity check, validation, join budget, rooms cap, join, replay, presence: one step after the other. Once
 * joined, what the client is told when it `asked` (undefined when it did not), else why not.
 */
async function join(
  socket: RelaySocket,
  data: unknown,
  deps: RoomDeps,
  asked: boolean,
): Promise<Refused | Joined | undefined> {
  if (!socket.connected) return undefined;
  const checked = await admitted(data, deps);
  if (!('fields' in checked)) return checked;
  const joining = shaped(parseJoinEvent, checked.fields);
  if (joining === undefined) return { outcome: 'invalid', code: 'INVALID_PARAMETER' };
  const { wkIdentity, since } = joining;
  const spent = await spend(socket, deps);
  if (spent !== undefined) return spent;
  // A socket that disconnected while its join waited for Redis must not be added to a room it would never leave.
  if (!socket.connected) return undefined;
  // socket.rooms holds the socket's own id besides the pair rooms.
  if (!socket.rooms.has(wkIdentity) && socket.rooms.size - 1 >= deps.roomsMax) {
    return { outcome: 'too_many_rooms', code: 'RATE_LIMITED' };
  }
  const cursor = since === undefined ? undefined : cursorOf(socket, wkIdentity, deps);
  if (cursor === undefined) dropCursor(socket, wkIdentity);
  // The room's latest join says whether the socket is authenticated for this path's side.
  const authenticated = checked.verified || deps.acksUnchecked;
  (socket.data.authenticated ??= new Map()).set(wkIdentity, authenticated);
  // From here on the room's live records wait behind the replay: none is missed or sent before it.
  cursor?.replaying();
  await socket.join(wkIdentity);
  // Acknowledged only once the pod hears the room: a record stored after the acknowledgement reaches the socket.
  let heard = false;
  await settlesWithin(
    deps.listening(wkIdentity).then(() => {
      heard = true;
    }),
    LISTEN_WAIT_MS,
  );
  if (!heard) {
    deps.log.warn('socket join waited too long for its room channel', { path: deps.side });
    return UNAVAILABLE;
  }
  let joined: Refused | Position | Resumed | undefined;
  if (cursor === undefined) {
    await deps.replay?.toSocket(socket, wkIdentity);
    // Counted once the join is fully handled, replay included.
    socketMetrics.joined(deps.side, 'joined');
  } else {
    joined = await resume(socket, cursor, wkIdentity, since!, authenticated, deps);
    if (joined === undefined || 'outcome' in joined) return joined;
  }
  if (!socket.connected) return undefined;
  // A stream socket authenticated for this side may acknowledge records: ack-capable (docs/api.md#presence).
  await deps.presence.joined(socket, wkIdentity, cursor !== undefined && authenticated);
  if (!asked) return undefined;
  try {
    const [position, peer] = await Promise.all([
      joined ?? deps.position(wkIdentity),
      deps.presence.side(wkIdentity, otherSide(deps.side)),
    ]);
    return { ...position, peer };
  } catch (err) {
    deps.log.warn('socket join could not read its answer', { path: deps.side, ...errorFields(err) });
    return UNAVAILABLE;
  }
}

/** One point of the per-IP join budget, which joins and acks draw on; undefined when spent. */
async function spend(socket: RelaySocket, deps: RoomDeps): Promise<Refused | undefined> {
  try {
    await deps.joins.consume(socket.data.ip);
    return undefined;
  } catch (err) {
    // Rejections are the budget's answer; an error (past its in-memory fallback) is Redis's, not the client's.
    if (!(err instanceof Error)) return { outcome: 'rate_limited', code: 'RATE_LIMITED' };
    deps.log.warn('socket join limiter failed', errorFields(err));
    return UNAVAILABLE;
  }
}

/** What the client is told of its ack (docs/api.md#acks-and-receipts). */
export type AckAnswer = { ok: true; delivered: { side: Side; at: string } } | { ok: false; code: ErrorCode };

/**
 * An ack: its shape, the socket's membership of the room and its authentication for this path's side, then one
 * script that spends a point of the join budget and acknowledges. A refusal records nothing and never disconnects
 * the socket.
 */
async function acknowledged(socket: RelaySocket, data: unknown, deps: RoomDeps): Promise<AckAnswer> {
  const acking = shaped(parseAckEvent, data);
  if (acking === undefined) return { ok: false, code: 'INVALID_PARAMETER' };
  const { wkIdentity, id } = acking;
  const authenticated = socket.data.authenticated?.get(wkIdentity);
  if (authenticated === undefined || !socket.rooms.has(wkIdentity)) {
    ackMetrics.counted('socket', 'not_found');
    return { ok: false, code: 'NOT_FOUND' };
  }
  if (!authenticated) {
    ackMetrics.counted('socket', 'unauthorized');
    return { ok: false, code: 'AUTH_REQUIRED' };
  }
  let result: AckResult;
  try {
    result = await deps.acknowledge(wkIdentity, id, socket.data.ip);
  } catch (err) {
    deps.log.warn('socket ack failed', { path: deps.side, ...errorFields(err) });
    return { ok: false, code: 'UNAVAILABLE' };
  }
  if (result === 'rate_limited') return { ok: false, code: 'RATE_LIMITED' };
  if (typeof result === 'string') return { ok: false, code: 'NOT_FOUND' };
  return { ok: true, delivered: { side: result.event.side, at: result.event.at } };
}

/** What the cursors of the path's sockets share. */
const cursorDeps = (deps: RoomDeps): CursorDeps => ({
  side: deps.side,
  read: deps.readStream,
  positionLost: deps.positionLost,
  log: deps.log,
});

/** The socket's cursor of `room`, made on its first join with a position. */
function cursorOf(socket: RelaySocket, room: string, deps: RoomDeps): StreamCursor {
  const cursors = (socket.data.cursors ??= new Map());
  const cursor = cursors.get(room);
  if (cursor instanceof StreamCursor) return cursor;
  const made = new StreamCursor(socket, room, cursorDeps(deps));
  cursors.set(room, made);
  return made;
}

/**
 * Replays the records after `since` to a joined stream socket, then the live ones that came meanwhile. When Redis
 * holds a lower offset than this pod sent a socket of the room, or than an `authenticated` socket's app says it
 * was sent, the position was lost (a failover): the stream is read again in the new epoch.
 */
async function resume(
  socket: RelaySocket,
  cursor: StreamCursor,
  room: string,
  since: StreamPosition,
  authenticated: boolean,
  deps: RoomDeps,
): Promise<Refused | Resumed | undefined> {
  let read;
  try {
    read = await deps.readStream(room, since);
    const { epoch, offset } = read;
    const trusted =
      authenticated && since.epoch !== undefined ? { epoch: since.epoch, offset: since.offset } : undefined;
    const joining = { cursor, ...(trusted ? { since: trusted } : {}) };
    if (epoch !== null && (await checkPosition(socket, room, epoch, offset, cursorDeps(deps), joining))) {
      read = await deps.readStream(room, since);
    }
  } catch (err) {
    deps.log.warn('socket join could not read the stream', { path: deps.side, ...errorFields(err) });
    return UNAVAILABLE;
  }
  if (!socket.connected) return undefined;
  const replayed = cursor.replayed(read);
  streamMetrics.recovery('join', deps.side, read.recovered);
  socketMetrics.joined(deps.side, 'joined');
  return { recovered: read.recovered, epoch: read.epoch, offset: read.offset, replayed };
}
