import type { Side } from '../core/sides.js';
import { errorFields, type Logger } from '../core/log.js';
import type { ActionRecord, DeliveredPosition, StreamPosition, StreamRead } from '../mailbox/index.js';
import { sendOnce } from './deliveries.js';
import { socketMetrics } from './metrics.js';
import { closeTransport } from './transport.js';
import type { RelaySocket, RoomCursor } from './types.js';

/** How long a record that skipped ahead waits for the ones before it before they are read from the stream. */
export const FILL_AFTER_MS = 100;

/** Reads a room's stream of this path's direction after a position (ActionStore.readStream). */
export type StreamReader = (room: string, since: StreamPosition) => Promise<StreamRead>;

/**
 * Whether the room's position this pod delivered in this path's direction is lost; draws a new epoch when Redis
 * holds a lower offset in it (ActionStore.positionLost).
 */
export type PositionCheck = (room: string, delivered: DeliveredPosition) => Promise<boolean>;

/** What a socket's cursors share on one path. */
export interface CursorDeps {
  side: Side;
  read: StreamReader;
  positionLost: PositionCheck;
  log: Logger;
}

interface Live {
  record: ActionRecord;
  bytes: number;
}

/**
 * A stream socket's position in one pair room (docs/api.md#resuming-the-stream): the records of the room's
 * direction reach it in strictly increasing offset order, each once. A record whose offset skips ahead waits for
 * the ones before it; those not arrived within FILL_AFTER_MS are read from the stream, and when one is no longer
 * retained the socket's transport is closed, so the client reconnects and resumes from what it has. While a
 * join's replay is read, live records wait behind it.
 */
export class StreamCursor implements RoomCursor {
  private epoch: string | null = null;
  private offset = 0;
  /** The id of the record at `offset`, when this cursor saw it. */
  private lastId: string | undefined;
  /** Whether a check of the position (positionLost) is under way. */
  private checking = false;
  /** Records above the next offset, by offset. */
  private readonly held = new Map<number, Live>();
  /** Live records that arrived while a replay was read; undefined when none is. */
  private buffered: Live[] | undefined;
  private fill: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly socket: RelaySocket,
    private readonly room: string,
    private readonly deps: CursorDeps,
  ) {}

  /** A replay is about to be read: live records wait until `replayed`. */
  replaying(): void {
    this.buffered ??= [];
  }

  /**
   * Sends the replay in offset order, then the live records that arrived meanwhile above it; records this cursor
   * sent already are not sent again. Returns how many replayed records were sent.
   */
  replayed(read: StreamRead): number {
    const sameEpoch = read.epoch === this.epoch;
    let sent = 0;
    let lastId: string | undefined;
    for (const { offset, json } of read.records) {
      if (sameEpoch && offset <= this.offset) continue;
      const record = JSON.parse(json) as ActionRecord;
      if (this.send({ record, bytes: Buffer.byteLength(json) }, 'replay')) sent++;
      if (offset === read.offset) lastId = record.id;
    }
    if (!sameEpoch || read.offset > this.offset) {
      this.epoch = read.epoch;
      this.offset = read.offset;
      this.lastId = lastId;
      this.held.clear();
    }
    socketMetrics.streamReplayed(this.deps.side, sent);
    const buffered = this.buffered ?? [];
    this.buffered = undefined;
    for (const live of buffered) this.accept(live);
    return sent;
  }

  offer(record: ActionRecord, bytes: number): void {
    if (this.stopped) return;
    if (this.buffered) this.buffered.push({ record, bytes });
    else this.accept({ record, bytes });
  }

  stop(): void {
    this.stopped = true;
    this.held.clear();
    clearTimeout(this.fill);
  }

  /** The last record this cursor is past, when it is past one. */
  delivered(): DeliveredPosition | undefined {
    if (this.epoch === null || this.offset === 0) return undefined;
    return {
      epoch: this.epoch,
      offset: this.offset,
      ...(this.lastId === undefined ? {} : { id: this.lastId }),
    };
  }

  /** The room's position in `epoch` was lost: a socket still in it resumes, and learns `recovered: false`. */
  positionLost(epoch: string): void {
    if (this.stopped || this.epoch !== epoch) return;
    socketMetrics.streamGapClosed(this.deps.side);
    this.deps.log.info('stream socket closed: the position it was sent was lost in Redis', {
      path: this.deps.side,
    });
    this.stop();
    closeTransport(this.socket);
  }

  private accept(live: Live): void {
    const { epoch, offset } = live.record as Required<Pick<ActionRecord, 'epoch' | 'offset'>>;
    // A new epoch: the direction's position was lost and its offsets start again at 1.
    if (epoch !== this.epoch) {
      this.epoch = epoch;
      this.offset = 0;
      this.lastId = undefined;
      this.held.clear();
    }
    if (offset <= this.offset) {
      // Not a copy of a record it was sent: the offset may have been given again after a failover lost it.
      if (!(this.socket.data.delivered?.has(live.record.id) ?? false)) void this.check(offset - 1);
      return;
    }
    if (offset > this.offset + 1) {
      this.held.set(offset, live);
      this.fill ??= setTimeout(() => void this.catchUp(), FILL_AFTER_MS);
      return;
    }
    this.send(live, 'live');
    this.offset = offset;
    this.lastId = live.record.id;
    this.release();
  }

  /** Sends the held records that are next in order. */
  private release(): void {
    for (let next = this.held.get(this.offset + 1); next; next = this.held.get(this.offset + 1)) {
      this.held.delete(this.offset + 1);
      this.send(next, 'live');
      this.offset += 1;
      this.lastId = next.record.id;
    }
    if (this.held.size === 0) {
      clearTimeout(this.fill);
      this.fill = undefined;
    }
  }

  /**
   * Asks Redis whether the room's position in this cursor's epoch, above the `stored` offset, was lost
   * (checkPosition); one check at a time.
   */
  private async check(stored: number): Promise<void> {
    if (this.checking || this.epoch === null) return;
    this.checking = true;
    try {
      await checkPosition(this.socket, this.room, this.epoch, stored, this.deps);
    } catch (err) {
      this.deps.log.warn('stream position not checked', { path: this.deps.side, ...errorFields(err) });
    } finally {
      this.checking = false;
    }
  }

  /** Whether the record went out (not when the connection had it already or holds too much unread). */
  private send(live: Live, delivery: 'live' | 'replay'): boolean {
    return sendOnce([this.socket], live.record, live.bytes, delivery) === 1;
  }

  /**
   * Reads what the socket misses from the stream and sends it in order: the records before the held ones that did
   * not arrive in time, or those stored while the pod's room channels were not heard. When one is no longer
   * retained the transport is closed: the client resumes from what it has and learns that records were lost.
   */
  async catchUp(): Promise<void> {
    clearTimeout(this.fill);
    this.fill = undefined;
    if (this.stopped || !this.socket.connected || this.buffered) return;
    const { epoch, offset } = this;
    let read: StreamRead;
    try {
      read = await this.deps.read(this.room, epoch === null ? { offset } : { epoch, offset });
    } catch (err) {
      // Without the stream the order cannot be kept: the client reconnects and resumes from what it has.
      this.deps.log.warn('stream socket closed: the stream was unreadable', {
        path: this.deps.side,
        ...errorFields(err),
      });
      closeTransport(this.socket);
      return;
    }
    // A join's replay took over, or live records moved the position meanwhile: what it read may be stale.
    if (this.stopped || this.buffered || epoch !== this.epoch || offset !== this.offset) {
      if (this.held.size > 0) this.fill ??= setTimeout(() => void this.catchUp(), FILL_AFTER_MS);
      return;
    }
    if (epoch !== null && read.epoch === epoch && read.offset < offset) {
      await this.check(read.offset);
      if (this.stopped) return;
    }
    if (read.recovered) {
      let filled = 0;
      for (const { offset: at, json } of read.records) {
        if (at !== this.offset + 1) continue;
        const live = { record: JSON.parse(json) as ActionRecord, bytes: Buffer.byteLength(json) };
        if (this.send(live, 'replay')) filled++;
        this.epoch = read.epoch;
        this.offset = at;
        this.release();
      }
      socketMetrics.streamReplayed(this.deps.side, filled);
      if (this.held.size === 0) return;
    }
    socketMetrics.streamGapClosed(this.deps.side);
    this.deps.log.info('stream socket closed: a record it missed is no longer retained', {
      path: this.deps.side,
    });
    this.stop();
    closeTransport(this.socket);
  }
}

/** The stream cursors of `room` on the socket's path on this pod. */
function roomCursors(socket: RelaySocket, room: string): StreamCursor[] {
  const cursors: StreamCursor[] = [];
  for (const id of socket.nsp.adapter.rooms.get(room) ?? []) {
    const cursor = socket.nsp.sockets.get(id)?.data.cursors?.get(room);
    if (cursor instanceof StreamCursor) cursors.push(cursor);
  }
  return cursors;
}

/** A join with a position checking the room's: its socket's cursor, and its `since` when the relay may trust it. */
export interface Joining {
  cursor: StreamCursor;
  since?: DeliveredPosition;
}

/**
 * When a stream socket of `room` on this pod was sent an offset above `stored` in `epoch` (or a `joining` socket
 * trusted to say so names one), checks the highest such position against Redis
 * (docs/operations.md#failover-and-the-stream); when it was lost, every stream socket of the room on this pod
 * still in that epoch but the joining one resumes. Whether it was lost.
 */
export async function checkPosition(
  socket: RelaySocket,
  room: string,
  epoch: string,
  stored: number,
  deps: CursorDeps,
  joining?: Joining,
): Promise<boolean> {
  let highest = joining?.since?.epoch === epoch && joining.since.offset > stored ? joining.since : undefined;
  for (const cursor of roomCursors(socket, room)) {
    const delivered = cursor.delivered();
    if (delivered?.epoch === epoch && delivered.offset > (highest?.offset ?? stored)) highest = delivered;
  }
  if (highest === undefined || !(await deps.positionLost(room, highest))) return false;
  for (const cursor of roomCursors(socket, room)) if (cursor !== joining?.cursor) cursor.positionLost(epoch);
  return true;
}
