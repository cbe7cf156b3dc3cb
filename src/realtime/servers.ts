import type { IncomingMessage } from 'node:http';
import { waitReady, type RedisClient } from '../core/redis/clients.js';
import { Server } from 'socket.io';
import { REPLAY_SIDE } from '../action-types/index.js';
import { acknowledge, type ActionStore, type StoredSignals } from '../mailbox/index.js';
import { SIDES, type Side } from '../core/sides.js';
import type { AuthGate } from '../identity/index.js';
import type { CoreConfig } from '../core/config/config.js';
import type { RealtimeConfig } from './variables.js';
import type { Keys } from '../core/redis/keys.js';
import { AppError } from '../core/errors.js';
import { clientIp, ipBucket } from '../core/http/client-ip.js';
import {
  attachToEmitter,
  coalesceHandshakeWrites,
  releaseHandshakeRequest,
  releaseUpgradeResponses,
} from '../core/library-patches.js';
import { query, type RawRequestGuard } from '../core/http/raw-request-guard.js';
import { sharedLimiter } from '../core/limits/limiters.js';
import { consumeOrReject } from '../core/limits/rate-limit.js';
import { errorFields, type Logger } from '../core/log.js';
import { socketMetrics } from './metrics.js';
import { Liveness } from '../core/redis/liveness.js';
import { settlesWithin } from '../core/role.js';
import { Backlogs } from './backlog.js';
import { oneConnect } from './connects.js';
import { ActionEmitter } from './emitter.js';
import { inBatches, Replay } from './replay.js';
import { channelClients, RoomChannels, type ChannelClients } from './room-channels.js';
import { RoomEvents } from './rooms.js';
import { SocketCap } from './socket-cap.js';
import type { RelayServer, RelaySocket } from './types.js';
import { sendToStreamSockets, type PresenceChange } from './deliveries.js';
import { otherSide, Presence, type SidePresence } from './presence.js';

/** docs/api.md#socket-limits: clients only ever send `join`, `leave` and `ack`. */
const LIMITS = { maxHttpBufferSize: 100 * 1024, pingInterval: 25_000, pingTimeout: 20_000 } as const;

/** Whether a handshake asks for Engine.IO protocol 4, the one version served (one `EIO` parameter, `4`). */
function speaksEngineIo4(req: IncomingMessage): boolean {
  const versions = query(req).getAll('EIO');
  return versions.length === 1 && versions[0] === '4';
}

/** How long one wait for the room channels' connections lasts before it is logged and started again. */
const READY_WAIT_MS = 5000;

export interface RealtimeDeps {
  /** `auth.modes.ack`: whether acks need an authenticated socket (AUTH_ROUTES). */
  config: CoreConfig & { realtime: RealtimeConfig; auth: { modes: { ack: string } } };
  log: Logger;
  /** The mailbox a key socket's replay reads. */
  store: ActionStore;
  keys: Keys;
  /** The rate limiters' fail-fast client (the join budget lives beside the HTTP ones). */
  limiterRedis: RedisClient;
  /** Identity signatures of joins, as for the HTTP writes. */
  authGate: AuthGate;
  /** The fail-fast client presence counts through. */
  redis: RedisClient;
}

/**
 * The two socket.io servers (docs/api.md#real-time-events) on the API's HTTP server, their rooms' Redis channels
 * and the action emitter.
 */
export class Realtime {
  readonly emitter: ActionEmitter;
  /** Each side's sockets per pair, across pods (docs/api.md#presence). */
  readonly presence: Presence;
  private readonly clients: ChannelClients;
  private readonly channels: RoomChannels;
  /** The channels' pair, pinged: a silent subscriber would cost every event from other pods. */
  private readonly liveness: Liveness[];
  private readonly cap: SocketCap;
  private readonly backlogs: Backlogs;
  /** In the order of SIDES. */
  private readonly servers: RelayServer[] = [];
  private stopping = false;

  constructor(private readonly deps: RealtimeDeps) {
    this.clients = channelClients(deps.config.redis.topology);
    this.channels = new RoomChannels(
      this.clients,
      deps.keys,
      deps.config.realtime.channelPartitions,
      deps.log,
    );
    this.emitter = new ActionEmitter(this.channels, deps.log);
    this.presence = new Presence({
      redis: deps.redis,
      keys: deps.keys,
      pod: this.channels.pod,
      ...deps.config.realtime.presence,
      log: deps.log,
      changed: (room, side, now) => this.presenceChanged(room, side, now),
      streamRooms: () => this.streamRooms(),
    });
    const intervalMs = deps.config.redis.livenessIntervalMs;
    this.liveness = (['pub', 'sub'] as const).map(
      (end) =>
        new Liveness(this.clients[end], {
          client: end === 'pub' ? 'socketPub' : 'socketSub',
          intervalMs,
          log: deps.log,
        }),
    );
    this.cap = new SocketCap(
      deps.config.realtime.socketsPerIp,
      deps.config.realtime.handshakes.connectTimeoutMs,
    );
    const { perSocket, perPod } = deps.config.realtime.backlog;
    this.backlogs = new Backlogs(perSocket, perPod, deps.log);
  }

  /** What the held stream reads wait on: the room channels. */
  get signals(): StoredSignals {
    return this.channels;
  }

  /**
   * Whether both paths serve sockets (readiness waits for it) and the room channels' connections answer: a pod whose
   * subscriber went silent gets no events from other pods until Liveness has replaced it.
   */
  serving(): boolean {
    return this.servers.length === SIDES.length && this.liveness.every((check) => check.alive());
  }

  /**
   * Attaches both servers once the room channels' connections are ready, so a pod never holds sockets that events
   * stored through other pods cannot reach. Until then the REST API serves alone and readiness stays 503.
   */
  async attachWhenReady(guard: RawRequestGuard): Promise<void> {
    while (!this.stopping) {
      try {
        await Promise.all([
          waitReady(this.clients.pub, READY_WAIT_MS),
          waitReady(this.clients.sub, READY_WAIT_MS),
        ]);
        break;
      } catch (err) {
        this.deps.log.warn('socket room channels waiting for Redis', errorFields(err));
      }
    }
    if (this.stopping) return;
    this.presence.start();
    const { config } = this.deps;
    const joins = sharedLimiter(
      this.deps.limiterRedis,
      config.keyPrefix,
      'joins',
      config.rateLimit.points,
      config.rateLimit.windowSeconds,
    );
    const handshakes = sharedLimiter(
      this.deps.limiterRedis,
      config.keyPrefix,
      'handshakes',
      config.realtime.handshakes.perMinute,
      60,
    );
    for (const side of SIDES) {
      const io = this.socketServer(side);
      // Not the HTTP server itself: the raw request guard checks requests and upgrades before they reach an
      // engine.
      attachToEmitter(io, guard.sockets);
      coalesceHandshakeWrites(io);
      releaseUpgradeResponses(io);
      io.engine.on('connection', (connection: RelaySocket['conn']) => {
        this.cap.track(connection);
        oneConnect(connection, () => socketMetrics.connectRefused(side));
      });
      const replay = side === REPLAY_SIDE ? new Replay(this.deps.store, this.deps.log) : undefined;
      const rooms = new RoomEvents({
        side,
        joins,
        replay,
        log: this.deps.log,
        auth: this.deps.authGate,
        roomsMax: this.deps.config.realtime.roomsMax,
        listening: (room) => this.channels.listening(side, room),
        readStream: (room, since) => this.deps.store.readStream(room, side, since),
        positionLost: (room, delivered) => this.deps.store.positionLost(room, side, delivered),
        acknowledge: (room, id, client) =>
          acknowledge(this.deps.store, this.emitter, 'socket', room, id, side, { limiter: joins, client }),
        acksUnchecked: config.auth.modes.ack === 'off',
        position: (room) => this.deps.store.position(room, side),
        presence: this.presence,
      });
      const { backlogs } = this;
      // Shared by every socket of the path (socket.io disconnects a socket once).
      const disconnected = function (this: RelaySocket) {
        backlogs.forget(this);
        socketMetrics.connected(side, -1);
      };
      io.on('connection', (socket: RelaySocket) => {
        this.cap.establish(socket.conn);
        socket.data.ip = this.ip(socket.request);
        releaseHandshakeRequest(socket);
        socket.data.side = side;
        socket.data.backlogs = this.backlogs;
        this.backlogs.watch(socket);
        socketMetrics.connected(side, 1);
        socket.on('disconnect', disconnected);
        rooms.handle(socket);
      });
      this.channels.serve(side, io);
      this.emitter.serve(side, io);
      this.replayAfterGaps(io, replay);
      this.servers.push(io);
    }
    const sideOf = (url: string) => SIDES.find((side) => url.startsWith(`/v1/socket/${side}/`));
    guard.serveSockets({
      owns: (url) => sideOf(url) !== undefined,
      admitHandshake: async (req) => {
        // engine.io would refuse it after the WebSocket's 101, in a raw answer on the upgraded connection.
        if (!speaksEngineIo4(req)) {
          throw new AppError(
            'BAD_REQUEST',
            'Unsupported Engine.IO protocol version: the relay speaks EIO=4.',
          );
        }
        try {
          await consumeOrReject(handshakes, this.ip(req), 'socket handshakes from this address');
        } catch (err) {
          socketMetrics.refused(sideOf(req.url ?? '')!);
          throw err;
        }
      },
    });
    this.deps.log.info('sockets serving', { paths: SIDES.map((side) => `/v1/socket/${side}`) });
  }

  /**
   * The room channels' subscriber reconnected (a Redis restart, a Sentinel failover, a silent connection Liveness
   * replaced: `ready` again; a failover of a cluster shard or a silent shard connection: its sharded subscriber
   * replaced, `subscribersReady`). Notices published meanwhile never came,
   * so the pod replays each key room's current record (sockets that had it already are skipped by its id), and
   * every stream socket, on both paths, gets what it missed from the stream.
   */
  private replayAfterGaps(io: RelayServer, replay: Replay | undefined): void {
    const recovered = async () => {
      // The mailbox client went through the same outage and may reconnect a moment later.
      while (!this.stopping) {
        try {
          await this.deps.store.whenReady(READY_WAIT_MS);
          break;
        } catch (err) {
          this.deps.log.warn('replay after a subscription gap waiting for Redis', errorFields(err));
        }
      }
      if (this.stopping) return;
      this.deps.log.info('socket room channels resubscribed; replaying pending requests');
      this.channels.wakeAll();
      await replay?.toRooms(io);
      const cursors = [...io.sockets.sockets.values()].flatMap((socket) => [
        ...(socket.data.cursors?.values() ?? []),
      ]);
      await inBatches(cursors, (cursor) => cursor.catchUp());
    };
    // One run at a time: the resubscriptions during it (a cluster's shards, one after another) make one more run.
    let running = false;
    let again = false;
    const onRecovered = async () => {
      if (running) {
        again = true;
        return;
      }
      running = true;
      do {
        again = false;
        await recovered().catch((err: unknown) => this.deps.log.error('replay failed', errorFields(err)));
      } while (again && !this.stopping);
      running = false;
    };
    this.clients.sub.on('ready', () => void onRecovered());
    this.clients.sub.on('subscribersReady', () => void onRecovered());
  }

  /** A side of a pair went connected or not: the stream sockets of the other side's room hear it, on every pod. */
  private presenceChanged(room: string, side: Side, now: SidePresence): void {
    const change: PresenceChange = { wkIdentity: room, side, ...now };
    const to = otherSide(side);
    this.channels.publishPresence(to, room, JSON.stringify(change));
    const io = this.servers[SIDES.indexOf(to)];
    if (io) sendToStreamSockets(io, room, 'presence', change);
  }

  /** The pair rooms this pod holds a stream socket of, by path. */
  private *streamRooms(): Iterable<[Side, string]> {
    for (const io of this.servers) {
      for (const socket of io.sockets.sockets.values()) {
        for (const room of socket.data.cursors?.keys() ?? []) yield [socket.data.side, room];
      }
    }
  }

  /** The key the socket cap and the join budget count this client under (an IPv6 client: its /64). */
  private ip(req: IncomingMessage): string {
    return ipBucket(clientIp(req, this.deps.config.rateLimit.trustProxyHops));
  }

  private socketServer(side: Side): RelayServer {
    const origins = this.deps.config.corsOrigins;
    return new Server({
      path: `/v1/socket/${side}`,
      serveClient: false,
      ...LIMITS,
      // A session that never connects to the namespace (an abandoned handshake) gives its SOCKETS_PER_IP slot back.
      connectTimeout: this.deps.config.realtime.handshakes.connectTimeoutMs,
      // Upgrades to other paths are the raw request guard's (an engine would close them unanswered after a
      // second).
      destroyUpgrade: false,
      cors: { origin: origins, methods: ['GET', 'POST'] },
      allowRequest: (req, callback) => {
        const allowed = this.cap.admit(this.ip(req), req);
        if (!allowed) socketMetrics.refused(side);
        callback(allowed ? null : 'Too many sockets from this address', allowed);
      },
    });
  }

  /**
   * SIGTERM, first step: closes every connection without a socket.io disconnect packet, so the clients see a
   * transport close and reconnect (to another pod: this one refuses handshakes from now on). Bounded by
   * `withinMs`. The room channels stay connected: records the pod still acknowledges must reach other pods.
   */
  async closeSockets(withinMs: number): Promise<void> {
    this.stopping = true;
    this.cap.refuseAll();
    const open = this.servers.reduce((sum, io) => sum + io.engine.clientsCount, 0);
    for (const io of this.servers) io.engine.close();
    const deadline = Date.now() + withinMs;
    const remaining = () => this.servers.reduce((sum, io) => sum + io.engine.clientsCount, 0);
    while (remaining() > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const closed = remaining() === 0;
    this.deps.log.info('sockets closed', { sockets: open, allClosed: closed });
  }

  /**
   * SIGTERM, last step, once the HTTP server stopped: the room channels' connections, once every answered POST's
   * notice was published (each is handed to the publisher before its answer).
   */
  async closeAdapter(): Promise<void> {
    for (const check of this.liveness) check.stop();
    await settlesWithin(this.presence.stop(), 1000);
    // QUIT waits behind the unsubscribes queued before it; with Redis away all this would wait for good.
    const closed = this.channels
      .published()
      .then(() => Promise.allSettled([this.clients.pub.quit(), this.clients.sub.quit()]));
    await settlesWithin(closed, 1000);
    this.clients.pub.disconnect();
    this.clients.sub.disconnect();
  }
}
