import type { Server as HttpServer, IncomingMessage } from 'node:http';
import type { RedisClient } from '../redis/clients.js';
import { Server } from 'socket.io';
import { ACTION_TYPES, type Side } from '../action-types.js';
import type { AuthGate } from '../auth/gate.js';
import type { Config } from '../config.js';
import { clientIp, ipBucket } from '../http/client-ip.js';
import { sharedLimiter } from '../http/limiters.js';
import { errorFields, type Logger } from '../log.js';
import { socketMetrics } from '../metrics.js';
import { waitReady } from '../redis/clients.js';
import { settlesWithin } from '../role.js';
import type { ActionStore } from '../store/action-store.js';
import { adapterClients, shardedAdapter, type AdapterClients } from './adapter.js';
import { trackDeliveries } from './deliveries.js';
import { ActionEmitter } from './emitter.js';
import { Replay } from './replay.js';
import { handleRooms } from './rooms.js';
import { SocketCap } from './socket-cap.js';
import type { RelayServer, RelaySocket } from './types.js';

const SIDES: readonly Side[] = ['key', 'wallet'];

/** docs/api.md#socket-limits: clients only ever send `join` and `leave`. */
const LIMITS = { maxHttpBufferSize: 100 * 1024, pingInterval: 25_000, pingTimeout: 20_000 } as const;

/** How long one wait for the adapter's connections lasts before it is logged and started again. */
const READY_WAIT_MS = 5000;

export interface RealtimeDeps {
  config: Config;
  log: Logger;
  /** The mailbox a key socket's replay reads. */
  store: ActionStore;
  /** The rate limiters' fail-fast client (the join budget lives beside the HTTP ones). */
  limiterRedis: RedisClient;
  /** Identity signatures of joins, as for the HTTP writes. */
  authGate: AuthGate;
}

/** The two socket.io servers (docs/api.md#real-time-events) on the API's HTTP server, their Redis adapter and the action emitter. */
export class Realtime {
  readonly emitter: ActionEmitter;
  private readonly clients: AdapterClients;
  private readonly cap: SocketCap;
  private readonly servers: RelayServer[] = [];
  private stopping = false;

  constructor(private readonly deps: RealtimeDeps) {
    this.emitter = new ActionEmitter(deps.store, deps.log);
    this.clients = adapterClients(deps.config.redis.topology);
    this.cap = new SocketCap(deps.config.socketsPerIp);
  }

  /** Whether both paths serve sockets (readiness waits for it). */
  serving(): boolean {
    return this.servers.length === SIDES.length;
  }

  /**
   * Attaches both servers once the adapter's connections are ready, so a pod never holds sockets that events
   * stored through other pods cannot reach. Until then the REST API serves alone and readiness stays 503.
   */
  async attachWhenReady(server: HttpServer): Promise<void> {
    while (!this.stopping) {
      try {
        await Promise.all([
          waitReady(this.clients.pub, READY_WAIT_MS),
          waitReady(this.clients.sub, READY_WAIT_MS),
        ]);
        break;
      } catch (err) {
        this.deps.log.warn('socket adapter waiting for Redis', errorFields(err));
      }
    }
    if (this.stopping) return;
    const joins = sharedLimiter(
      this.deps.limiterRedis,
      this.deps.config.keyPrefix,
      'joins',
      this.deps.config.rateLimit.points,
      this.deps.config.rateLimit.windowSeconds,
    );
    for (const side of SIDES) {
      const io = this.socketServer(side);
      io.attach(server);
      io.engine.on('connection', (connection: RelaySocket['conn']) =>
        this.cap.track(this.ip(connection.request), connection),
      );
      const replays = Object.values(ACTION_TYPES).some((rule) => rule.side === side && rule.replay);
      const replay = replays ? new Replay(this.deps.store, this.deps.log) : undefined;
      io.on('connection', (socket: RelaySocket) => {
        socket.data.ip = this.ip(socket.request);
        socketMetrics.connected(side, 1);
        socket.once('disconnect', () => socketMetrics.connected(side, -1));
        if (replay) trackDeliveries(socket);
        handleRooms(socket, {
          side,
          joins,
          replay,
          log: this.deps.log,
          auth: this.deps.authGate,
          roomsMax: this.deps.config.socketRoomsMax,
        });
      });
      this.emitter.serve(side, io);
      this.servers.push(io);
    }
    this.deps.log.info('sockets serving', { paths: SIDES.map((side) => `/v1/socket/${side}`) });
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
      cors: { origin: origins, methods: ['GET', 'POST'] },
      adapter: shardedAdapter(this.clients, this.deps.config.keyPrefix, side),
      allowRequest: (req, callback) => {
        const allowed = this.cap.allows(this.ip(req));
        if (!allowed) socketMetrics.refused(side);
        callback(allowed ? null : 'Too many sockets from this address', allowed);
      },
    });
  }

  /**
   * SIGTERM: closes every connection without a socket.io disconnect packet, so the clients see a transport
   * close and reconnect (to another pod: this one refuses handshakes from now on). Bounded by `withinMs`.
   */
  async close(withinMs: number): Promise<void> {
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
    // QUIT waits behind the unsubscribes the closing rooms queued; with Redis away it would wait for good.
    await settlesWithin(Promise.allSettled([this.clients.pub.quit(), this.clients.sub.quit()]), 1000);
    this.clients.pub.disconnect();
    this.clients.sub.disconnect();
  }
}
