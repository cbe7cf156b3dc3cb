import type { RedisClient } from '../core/redis/clients.js';
import type { Keys } from '../core/redis/keys.js';
import { defineScript, readScript } from '../core/redis/scripts.js';
import { SIDES, type Side } from '../core/sides.js';
import { errorFields, type Logger } from '../core/log.js';
import { socketMetrics } from './metrics.js';
import { countLive, decodePresence, livePods, podsOf, type PresenceHash } from './presence-hash.js';
import { inBatches } from './replay.js';
import type { RelaySocket } from './types.js';

const WRITE = readScript(new URL('lua/presence-write-1.lua', import.meta.url));
const REAP = readScript(new URL('lua/presence-reap-1.lua', import.meta.url));

/** A side of a pair as the apps see it (docs/api.md#presence). */
export interface SidePresence {
  connected: boolean;
  /** ISO-8601: now while connected, else when its last socket left; null when not seen for a while. */
  lastSeen: string | null;
}

export type PairPresence = Record<Side, SidePresence>;

/** What GET /v1/presence reads. */
export interface PresenceReads {
  pair(wkIdentity: string): Promise<PairPresence>;
}

export const otherSide = (side: Side): Side => (side === 'key' ? 'wallet' : 'key');

export interface PresenceDeps {
  redis: RedisClient;
  keys: Keys;
  /** This pod's id, the one its room channel notices carry. */
  pod: string;
  ttlSeconds: number;
  lastSeenSeconds: number;
  log: Logger;
  /** A side of a pair went connected or not connected (seen by this pod only): tell the other side's room. */
  changed(wkIdentity: string, side: Side, now: SidePresence): void;
  /** The pair rooms this pod holds a stream socket of, by path. */
  streamRooms(): Iterable<[Side, string]>;
}

/** This pod's sockets of one side in one pair room, and what Redis last acknowledged of them. */
interface Held {
  room: string;
  side: Side;
  joined: number;
  ackable: number;
  /** When `joined` last fell (ms): the time `lastSeen` takes when a write lowers it, however late it lands. */
  fell: number;
  /**
   * The counts Redis last acknowledged, the ones the other pods have seen (a write that failed may still land: a
   * client resends it on reconnect); undefined when Redis may have dropped them (`renew`).
   */
  acked: Counts | undefined;
  /** The write under way, or resolved. */
  queue: Promise<void>;
  /** The write queued behind it, not started yet: it writes the counts of its start, so one is enough. */
  next: Promise<void> | undefined;
}

interface Counts {
  joined: number;
  ackable: number;
}

/**
 * Presence of each side of a pair, counted across pods (docs/api.md#presence): each pod writes its own counts in the
 * side's hash (the counts as they are, so a lost write is put right by the next one; those that failed are written
 * again once Redis answers) and keeps its liveness key; the counts of a pod whose key expired no longer count, and
 * whoever finds them first drops them. The write or the drop that takes a side's total from 0 or to 0 is reported
 * (`changed`), once, by the pod that made it.
 */
export class Presence implements PresenceReads {
  private readonly writeCounts;
  private readonly reap;
  private renewal: NodeJS.Timeout | undefined;
  private readonly hashTtl: number;
  /** By `<side> <room>`: the rooms this pod holds sockets of, or whose zero counts Redis has not acknowledged. */
  private readonly held = new Map<string, Held>();
  /** Those whose last write failed or whose counts Redis lost: written again when Redis answers. */
  private readonly unwritten = new Set<Held>();
  /** How many times Redis was found without this pod's liveness: a write sent before then may have been dropped. */
  private losses = 0;
  private readonly reconnected = () => void this.renew();

  constructor(private readonly deps: PresenceDeps) {
    this.writeCounts = defineScript<unknown[]>(deps.redis, 'presenceWrite', WRITE);
    this.reap = defineScript<unknown[]>(deps.redis, 'presenceReap', REAP);
    // Without lastSeen kept the counts still need a lifetime: a day after the pair's last change.
    this.hashTtl = deps.lastSeenSeconds > 0 ? deps.lastSeenSeconds : 86_400;
  }

  /**
   * Keeps this pod alive (its counts count) every third of PRESENCE_TTL_SECONDS, and checks the stream rooms' peers;
   * on each renewal and each reconnect, writes again what Redis missed.
   */
  start(): void {
    const tick = () => {
      void this.renew();
      void this.sweep();
    };
    void this.renew();
    this.deps.redis.on('ready', this.reconnected);
    this.renewal = setInterval(tick, (this.deps.ttlSeconds * 1000) / 3);
    this.renewal.unref();
  }

  /** The pod stops: its counts stop counting at once. */
  async stop(): Promise<void> {
    clearInterval(this.renewal);
    this.deps.redis.off('ready', this.reconnected);
    await this.deps.redis.del(this.deps.keys.pod(this.deps.pod)).catch(() => undefined);
  }

  /** The socket is counted in `room` (again: its ack-capable flag may have changed). */
  async joined(socket: RelaySocket, room: string, ackable: boolean): Promise<void> {
    const counted = (socket.data.presence ??= new Map());
    const before = counted.get(room);
    counted.set(room, ackable);
    if (before === undefined) await this.count(room, socket.data.side, 1, ackable ? 1 : 0);
    else if (before !== ackable) await this.count(room, socket.data.side, 0, ackable ? 1 : -1);
  }

  /** The socket left `room` (a leave, or a refused join after it was counted). */
  async left(socket: RelaySocket, room: string): Promise<void> {
    const ackable = socket.data.presence?.get(room);
    if (ackable === undefined) return;
    socket.data.presence!.delete(room);
    await this.count(room, socket.data.side, -1, ackable ? -1 : 0);
  }

  /** The socket disconnected: it leaves every room it was counted in. */
  async disconnected(socket: RelaySocket): Promise<void> {
    const rooms = [...(socket.data.presence?.keys() ?? [])];
    await Promise.all(rooms.map((room) => this.left(socket, room)));
  }

  /** One side of a pair now. */
  async side(wkIdentity: string, side: Side): Promise<SidePresence> {
    const hash = decodePresence(await this.deps.redis.hgetall(this.deps.keys.presence(wkIdentity, side)));
    const { now, moved } = await this.settle(wkIdentity, side, hash);
    if (moved) this.report(wkIdentity, side, now);
    return now;
  }

  async pair(wkIdentity: string): Promise<PairPresence> {
    const [key, wallet] = await Promise.all(SIDES.map((side) => this.side(wkIdentity, side)));
    return { key: key!, wallet: wallet! };
  }

  /**
   * Renews this pod's liveness. When Redis no longer had it (expired while Redis was out of reach, lost in a
   * failover) other pods may have dropped this pod's counts: all are written again, as are those whose write failed.
   * Never throws.
   */
  private async renew(): Promise<void> {
    const { redis, keys, pod, ttlSeconds, log } = this.deps;
    let was: string | null;
    try {
      was = await redis.set(keys.pod(pod), '1', 'EX', ttlSeconds, 'GET');
    } catch (err) {
      log.warn('pod liveness not renewed', errorFields(err));
      return;
    }
    if (was === null) {
      this.losses++;
      for (const held of this.held.values()) {
        held.acked = undefined;
        this.unwritten.add(held);
      }
    }
    for (const held of this.unwritten) void this.flush(held);
  }

  /**
   * Finds the pods that died holding the peers of this pod's stream sockets: their sides go not connected. One
   * HGETALL per peer and one EXISTS per pod they name, in batches; only the peers naming a dead pod are settled.
   * Runs every third of PRESENCE_TTL_SECONDS once started. Never throws.
   */
  async sweep(): Promise<void> {
    const { redis, keys, pod, log } = this.deps;
    const peers = new Map<string, { side: Side; room: string; hash?: PresenceHash }>();
    for (const [path, room] of this.deps.streamRooms()) {
      peers.set(`${otherSide(path)} ${room}`, { side: otherSide(path), room });
    }
    try {
      await inBatches([...peers.values()], async (peer) => {
        peer.hash = decodePresence(await redis.hgetall(keys.presence(peer.room, peer.side)));
      });
      const named = new Set<string>();
      for (const { hash } of peers.values()) for (const other of podsOf(hash!)) named.add(other);
      named.delete(pod);
      const alive = (await livePods(redis, keys, named)).add(pod);
      const dying = [...peers.values()].filter(({ hash }) =>
        [...podsOf(hash!)].some((one) => !alive.has(one)),
      );
      await inBatches(dying, async ({ side, room, hash }) => {
        const { now, moved } = await this.settle(room, side, hash!, 0, alive);
        if (moved) this.report(room, side, now);
      });
    } catch (err) {
      // Redis is away: the next sweep tries again.
      log.warn('presence sweep failed', errorFields(err));
    }
  }

  /** Counts a change of this pod's sockets and writes the counts. Never throws. */
  private count(room: string, side: Side, joined: number, ackable: number): Promise<void> {
    const id = `${side} ${room}`;
    let held = this.held.get(id);
    if (held === undefined) {
      held = {
        room,
        side,
        joined: 0,
        ackable: 0,
        fell: Date.now(),
        acked: { joined: 0, ackable: 0 },
        queue: Promise.resolve(),
        next: undefined,
      };
      this.held.set(id, held);
    }
    held.joined += joined;
    held.ackable += ackable;
    if (joined < 0) held.fell = Date.now();
    // A join renews the pod's liveness too: a key Redis lost (a failover without replicas) is back at once.
    if (joined > 0) void this.renew();
    return this.flush(held);
  }

  /** Writes the room's counts once the write under way is done, unless one queued already will. Never throws. */
  private flush(held: Held): Promise<void> {
    held.next ??= held.queue.then(() => {
      held.next = undefined;
      return this.write(held);
    });
    held.queue = held.next;
    return held.next;
  }

  /**
   * Writes the room's counts as they are now, unless Redis has them, and reports the transition it makes: from the
   * counts the other pods have seen, even when a failed write of them landed.
   */
  private async write(held: Held): Promise<void> {
    const { room, side, joined, ackable } = held;
    const { keys, pod, lastSeenSeconds, log } = this.deps;
    try {
      if (!this.unwritten.has(held) && held.acked?.joined === joined && held.acked.ackable === ackable)
        return;
      const losses = this.losses;
      let reply: unknown[];
      try {
        const left = lastSeenSeconds > 0 ? held.fell : '';
        reply = await this.writeCounts(
          [keys.presence(room, side)],
          [pod, joined, ackable, this.hashTtl, left],
        );
      } catch (err) {
        this.unwritten.add(held);
        log.warn('presence not written', { side, ...errorFields(err) });
        return;
      }
      const change = joined - (held.acked?.joined ?? Number(reply[0]));
      // Unless another pod may have dropped them since: then they stay to be written again.
      if (losses === this.losses) {
        held.acked = { joined, ackable };
        this.unwritten.delete(held);
      }
      const { now, moved } = await this.settle(room, side, decodePresence(reply.slice(1)), change);
      if (moved) this.report(room, side, now);
    } catch (err) {
      log.warn('presence not read', { side, ...errorFields(err) });
    } finally {
      // Nothing held, Redis has that, and no write queued (each change queues one): forgotten.
      if (held.next === undefined && !this.unwritten.has(held) && held.joined + held.ackable === 0) {
        this.held.delete(`${side} ${room}`);
      }
    }
  }

  /**
   * The side's presence from its hash: the counts of live pods only; those of dead pods are dropped. `moved`: the
   * total went from 0 or to 0 with this pod's `change` of its joined sockets (just written) and the drop (a
   * concurrent drop by another pod is that pod's to report). `alive`: the live pods, when already known.
   */
  private async settle(
    room: string,
    side: Side,
    hash: PresenceHash,
    change = 0,
    alive?: Set<string>,
  ): Promise<{ now: SidePresence; moved: boolean }> {
    const others = [...podsOf(hash)].filter((pod) => pod !== this.deps.pod);
    const live = alive ?? (await livePods(this.deps.redis, this.deps.keys, others)).add(this.deps.pod);
    const dead = others.filter((pod) => !live.has(pod));
    let settled = hash;
    let dropped = 0;
    if (dead.length > 0) {
      const reply = await this.reap(
        [this.deps.keys.presence(room, side)],
        [this.deps.lastSeenSeconds > 0 ? '1' : '0', ...dead],
      );
      dropped = Number(reply[0]);
      settled = decodePresence(reply.slice(1));
    }
    const total = countLive(settled.joined, live);
    const now: SidePresence = {
      connected: total > 0,
      lastSeen: total > 0 ? new Date().toISOString() : this.lastSeen(settled.lastSeen),
    };
    return { now, moved: total - change + dropped > 0 !== total > 0 };
  }

  private lastSeen(ms: number | null): string | null {
    if (ms === null || Date.now() - ms > this.deps.lastSeenSeconds * 1000) return null;
    return new Date(ms).toISOString();
  }

  private report(room: string, side: Side, now: SidePresence): void {
    socketMetrics.presenceChanged(side, now.connected);
    this.deps.changed(room, side, now);
  }
}
