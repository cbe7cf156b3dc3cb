import type { RedisClient } from '../core/redis/clients.js';
import type { Keys } from '../core/redis/keys.js';
import { defineScript, readScript } from '../core/redis/scripts.js';
import { SIDES, type Side } from '../core/sides.js';
import { errorFields, type Logger } from '../core/log.js';
import { socketMetrics } from './metrics.js';
import { countLive, decodePresence, livePods, podsOf, type PresenceHash } from './presence-hash.js';
import type { RelaySocket } from './types.js';

const CHANGE = readScript(new URL('lua/presence-change-1.lua', import.meta.url));
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

/**
 * Presence of each side of a pair, counted across pods (docs/api.md#presence): each pod counts its own sockets in
 * the side's hash (one HINCRBY per change) and keeps its liveness key; the counts of a pod whose key expired no
 * longer count, and whoever finds them first drops them. The pod that sees a side's total go from 0 to 1 or back
 * reports it (`changed`), so each transition is reported once.
 */
export class Presence implements PresenceReads {
  private readonly change;
  private readonly reap;
  private renewal: NodeJS.Timeout | undefined;
  private readonly hashTtl: number;

  constructor(private readonly deps: PresenceDeps) {
    this.change = defineScript<unknown[]>(deps.redis, 'presenceChange', CHANGE);
    this.reap = defineScript<unknown[]>(deps.redis, 'presenceReap', REAP);
    // Without lastSeen kept the counts still need a lifetime: a day after the pair's last change.
    this.hashTtl = deps.lastSeenSeconds > 0 ? deps.lastSeenSeconds : 86_400;
  }

  /** Keeps this pod alive (its counts count) every third of PRESENCE_TTL_SECONDS, and checks the stream rooms' peers. */
  start(): void {
    const tick = () => {
      void this.renew();
      void this.sweep();
    };
    void this.renew();
    this.renewal = setInterval(tick, (this.deps.ttlSeconds * 1000) / 3);
    this.renewal.unref();
  }

  /** The pod stops: its counts stop counting at once. */
  async stop(): Promise<void> {
    clearInterval(this.renewal);
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
    const { now, live, dropped } = await this.settle(wkIdentity, side, hash);
    if (dropped > 0 && live === 0) this.report(wkIdentity, side, now);
    return now;
  }

  async pair(wkIdentity: string): Promise<PairPresence> {
    const [key, wallet] = await Promise.all(SIDES.map((side) => this.side(wkIdentity, side)));
    return { key: key!, wallet: wallet! };
  }

  private async renew(): Promise<void> {
    const { redis, keys, pod, ttlSeconds, log } = this.deps;
    await redis.set(keys.pod(pod), '1', 'EX', ttlSeconds).catch((err: unknown) => {
      log.warn('pod liveness not renewed', errorFields(err));
    });
  }

  /** Finds the pods that died holding the peers of this pod's stream sockets: their sides go not connected. */
  private async sweep(): Promise<void> {
    const peers = new Set([...this.deps.streamRooms()].map(([path, room]) => `${otherSide(path)} ${room}`));
    try {
      for (const peer of peers) {
        const [side, room] = peer.split(' ') as [Side, string];
        await this.side(room, side);
      }
    } catch (err) {
      // Redis is away: the next sweep tries again.
      this.deps.log.warn('presence sweep failed', errorFields(err));
    }
  }

  /** Counts a change of this pod's sockets and reports the transition it makes, if any. Never throws. */
  private async count(room: string, side: Side, joined: number, ackable: number): Promise<void> {
    const { keys, pod, lastSeenSeconds, log } = this.deps;
    try {
      // A join renews the pod's liveness too: a key Redis lost (a failover without replicas) is back at once.
      if (joined > 0) void this.renew();
      const reply = await this.change(
        [keys.presence(room, side)],
        [pod, joined, ackable, this.hashTtl, lastSeenSeconds > 0 ? '1' : '0'],
      );
      const { now, live, dropped } = await this.settle(room, side, decodePresence(reply));
      // Only the change that makes the total 0 or lifts it from 0 is a transition, or dropping a dead pod's last ones.
      const before = live - joined;
      const moved = joined === 0 ? dropped > 0 && live === 0 : (before === 0) !== (live === 0);
      if (moved) this.report(room, side, now);
    } catch (err) {
      log.warn('presence not counted', { side, ...errorFields(err) });
    }
  }

  /**
   * The side's presence from its hash: the counts of live pods only (`live` joined sockets); those of dead pods are
   * dropped (`dropped`: the joined sockets this call dropped; a concurrent one drops none).
   */
  private async settle(
    room: string,
    side: Side,
    hash: PresenceHash,
  ): Promise<{ now: SidePresence; live: number; dropped: number }> {
    const others = [...podsOf(hash)].filter((pod) => pod !== this.deps.pod);
    const alive = await livePods(this.deps.redis, this.deps.keys, others);
    alive.add(this.deps.pod);
    const dead = others.filter((pod) => !alive.has(pod));
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
    const live = countLive(settled.joined, alive);
    const now: SidePresence = {
      connected: live > 0,
      lastSeen: live > 0 ? new Date().toISOString() : this.lastSeen(settled.lastSeen),
    };
    return { now, live, dropped };
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
