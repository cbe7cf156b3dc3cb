import { createHash, randomBytes } from 'node:crypto';
import { OTHER_SIDE, type Side } from '../core/sides.js';
import type { Keys } from '../core/redis/keys.js';
import { errorFields, type Logger } from '../core/log.js';
import { socketMetrics } from './metrics.js';
import { createRedis, type RedisClient } from '../core/redis/clients.js';
import type { RedisTopology } from '../core/config/config.js';
import { Cluster } from 'ioredis';
import type { ActionRecord, DeliveredEvent, ReceiptNotice, StoredSignals, Watch } from '../mailbox/index.js';
import { deliverReceipt, deliverToRoom, sendToStreamSockets, type PresenceChange } from './deliveries.js';
import type { RelayServer } from './types.js';

/** The publisher and the subscriber of a pod's room channels, shared by both paths. */
export interface ChannelClients {
  pub: RedisClient;
  sub: RedisClient;
}

/** On a cluster the subscriber holds one connection per master (ioredis' sharded subscribers). */
export function channelClients(topology: RedisTopology): ChannelClients {
  return { pub: createRedis(topology, 'socketPub'), sub: createRedis(topology, 'socketSub') };
}

/** A subscribed channel: how many of the pod's rooms of one path it serves, and when Redis confirmed it. */
interface Subscription {
  side: Side;
  rooms: number;
  confirmed: Promise<unknown>;
}

/** Characters of the publishing pod's id, which opens each of its notices. */
const POD_ID_BYTES = 16;

/** What a notice carries besides a stored record: its kind follows the room in its first line. */
export type NoticeKind = 'delivered' | 'presence';

/**
 * Cross-pod delivery of stored action records (docs/operations.md#cross-pod-events): a sharded pub/sub channel
 * per pair room and path (`SSUBSCRIBE`/`SPUBLISH`), subscribed while the pod holds a socket in the room, so a pod
 * receives the records of its own rooms only and a cluster spreads the channels over its masters. With
 * `partitions` > 0 rooms share that many hashed channels per path instead, and a pod skips the records of rooms
 * it does not hold.
 *
 * A notice is `<pod id> <room>\n<stored record JSON>`: a pod skips its own (it delivered them already) and
 * those of rooms it does not hold before decoding the record. A notice of another kind names it after the room:
 * `<pod id> <room> <kind>\n<JSON>` (`presence`: a side of the pair went connected or not connected; `delivered`:
 * a receipt's event, docs/api.md#acks-and-receipts), which a pod that knows no kinds skips as a room it does not
 * hold.
 *
 * The held stream reads of the pod (long-polls) watch a room's channel too: it stays subscribed while one waits,
 * and each record of the room, stored on this pod or announced by a notice, wakes them.
 */
export class RoomChannels implements StoredSignals {
  /** This pod's id: it opens each of its notices, and names its presence counts and liveness key. */
  readonly pod = randomBytes(POD_ID_BYTES / 2).toString('hex');
  private readonly subscriptions = new Map<string, Subscription>();
  /** The wake-ups of the held stream reads, by `<side> <room>`. */
  private readonly watchers = new Map<string, Set<() => void>>();
  private readonly servers = new Map<Side, RelayServer>();
  /** Notices handed to the publisher and not answered yet (ioredis may hold them for a turn: auto-pipelining). */
  private readonly publishing = new Set<Promise<unknown>>();

  constructor(
    private readonly clients: ChannelClients,
    private readonly keys: Keys,
    private readonly partitions: number,
    private readonly log: Logger,
  ) {
    clients.sub.on('smessageBuffer', (channel: Buffer, message: Buffer) => this.received(channel, message));
  }

  /**
   * Follows the pair rooms of `io`: a room's channel is subscribed when the room's first socket on this pod joins
   * it and left when its last one leaves (a socket's own room, named by its id, is not a pair's).
   */
  serve(side: Side, io: RelayServer): void {
    this.servers.set(side, io);
    const pairRoom = (room: string) => !io.sockets.sockets.has(room);
    io.sockets.adapter.on('create-room', (room: string) => pairRoom(room) && this.hold(side, room));
    io.sockets.adapter.on('delete-room', (room: string) => pairRoom(room) && this.release(side, room));
  }

  /** Resolves once Redis confirmed the subscription of a room the pod holds: every record stored after it reaches the pod. */
  listening(side: Side, room: string): Promise<unknown> {
    return this.subscriptions.get(this.channelOf(side, room))?.confirmed ?? Promise.resolve();
  }

  /**
   * Publishes a record this pod stored to the other pods holding its room, and wakes this pod's held reads of it.
   * A failure is counted and logged,
   * never thrown: the record reached this pod's sockets, stays readable, and key-bound ones are replayed on the
   * next join.
   */
  publish(side: Side, record: ActionRecord, json: string): void {
    const room = record.wkIdentity;
    this.send(side, room, `${this.pod} ${room}\n${json}`);
  }

  private send(side: Side, room: string, notice: string): void {
    const sent = this.clients.pub
      .spublish(this.channelOf(side, room), notice)
      .catch((err: unknown) => {
        socketMetrics.publishFailed(side);
        this.log.error('socket notice not published', { path: side, ...errorFields(err) });
      })
      .finally(() => this.publishing.delete(sent));
    this.publishing.add(sent);
    this.wake(side, room);
  }

  /** Calls `wake` for every record of `side` in `room` stored on any pod until released; subscribes meanwhile. */
  watch(side: Side, room: string, wake: () => void): Watch {
    const key = `${side} ${room}`;
    let watching = this.watchers.get(key);
    if (!watching) this.watchers.set(key, (watching = new Set()));
    watching.add(wake);
    this.hold(side, room);
    let released = false;
    return {
      listening: this.listening(side, room),
      release: () => {
        if (released) return;
        released = true;
        watching.delete(wake);
        if (watching.size === 0) this.watchers.delete(key);
        this.release(side, room);
      },
    };
  }

  /** Wakes every held read of the pod: after a subscription gap, records may have come unannounced. */
  wakeAll(): void {
    for (const watching of this.watchers.values()) for (const wake of watching) wake();
  }

  private wake(side: Side, room: string): void {
    for (const wake of this.watchers.get(`${side} ${room}`) ?? []) wake();
  }

  /**
   * Where the ack script publishes the `delivered` notice of `room` (the sender side's channel, by the record's
   * target side). Undefined on a cluster, where the channel lives in another slot than the pair's keys: the
   * caller publishes it then (publishNotice).
   */
  receiptNotice(room: string): ReceiptNotice | undefined {
    if (this.clients.pub instanceof Cluster) return undefined;
    return {
      channels: { key: this.channelOf('wallet', room), wallet: this.channelOf('key', room) },
      header: this.header(room, 'delivered'),
    };
  }

  /** Publishes a notice of `kind` (its JSON) to the other pods holding `room` on `side`'s path; never throws. */
  publishNotice(side: Side, room: string, kind: NoticeKind, json: string): void {
    this.send(side, room, `${this.header(room, kind)}${json}`);
  }

  private header(room: string, kind: NoticeKind): string {
    return `${this.pod} ${room} ${kind}\n`;
  }

  /** Publishes a presence change to the other pods holding `room` on `side`'s path. Failures are logged, never thrown. */
  publishPresence(side: Side, room: string, json: string): void {
    this.publishNotice(side, room, 'presence', json);
  }

  /** Settles once every notice published so far was answered or failed: a QUIT sent earlier would overtake them. */
  published(): Promise<unknown> {
    return Promise.allSettled(this.publishing);
  }

  private channelOf(side: Side, room: string): string {
    if (this.partitions === 0) return this.keys.roomChannel(side, room);
    const hash = createHash('sha1').update(room).digest().readUInt32BE(0);
    return this.keys.roomChannel(side, `p${hash % this.partitions}`);
  }

  private hold(side: Side, room: string): void {
    const channel = this.channelOf(side, room);
    const held = this.subscriptions.get(channel);
    if (held) {
      held.rooms += 1;
      return;
    }
    const confirmed = this.clients.sub.ssubscribe(channel);
    // A join waiting for it sees the failure (and is refused, so the room is left again); nobody else waits.
    confirmed.catch((err: unknown) =>
      this.log.warn('socket room channel not subscribed', { path: side, ...errorFields(err) }),
    );
    this.subscriptions.set(channel, { side, rooms: 1, confirmed });
  }

  private release(side: Side, room: string): void {
    const channel = this.channelOf(side, room);
    const subscription = this.subscriptions.get(channel);
    if (!subscription) return;
    subscription.rooms -= 1;
    if (subscription.rooms > 0) return;
    this.subscriptions.delete(channel);
    this.clients.sub.sunsubscribe(channel).catch((err: unknown) => {
      this.log.warn('socket room channel not left', { path: side, ...errorFields(err) });
    });
  }

  private received(channel: Buffer, message: Buffer): void {
    const subscription = this.subscriptions.get(channel.toString());
    if (!subscription) return;
    const { side } = subscription;
    socketMetrics.noticeReceived(side, message.length);
    if (message.toString('latin1', 0, POD_ID_BYTES) === this.pod) return;
    const end = message.indexOf(10, POD_ID_BYTES + 1);
    if (end < 0) return;
    const [room = '', kind] = message.toString('latin1', POD_ID_BYTES + 1, end).split(' ');
    if (kind === undefined) this.wake(side, room);
    const io = this.servers.get(side);
    if (!io?.sockets.adapter.rooms.has(room)) return;
    if (kind === 'presence') return this.presenceReceived(io, room, message.toString('utf8', end + 1));
    if (kind === 'delivered') return this.receiptReceived(io, side, room, message.toString('utf8', end + 1));
    if (kind !== undefined) return;
    let record: ActionRecord;
    try {
      record = JSON.parse(message.toString('utf8', end + 1)) as ActionRecord;
    } catch {
      return;
    }
    if (record?.wkIdentity !== room || typeof record.id !== 'string') return;
    deliverToRoom(io, record, message.length - end - 1, 'live');
  }

  /** A receipt's `delivered` notice, for a room this pod holds on the sender side's path. */
  private receiptReceived(io: RelayServer, side: Side, room: string, text: string): void {
    let event: DeliveredEvent;
    try {
      event = JSON.parse(text) as DeliveredEvent;
    } catch {
      return;
    }
    if (event?.wkIdentity !== room || OTHER_SIDE[event.side] !== side) return;
    deliverReceipt(io, event);
  }

  private presenceReceived(io: RelayServer, room: string, json: string): void {
    let change: PresenceChange;
    try {
      change = JSON.parse(json) as PresenceChange;
    } catch {
      return;
    }
    if (change?.wkIdentity !== room) return;
    sendToStreamSockets(io, room, 'presence', change);
  }
}
