import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { EventEmitter } from 'node:events';
import { ServerResponse, type IncomingMessage, type Server as HttpServer } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Context } from 'koa';
import type { Cluster, Redis } from 'ioredis';
import type { Server as SocketServer, Socket } from 'socket.io';

/**
 * Every use of a library's or Node's private members or undocumented behaviour, in one place. Each was written
 * against the versions below; `checkPatchedLibraries` refuses to start with any other installed or running.
 */
export const PATCHED_VERSIONS: Readonly<Record<string, string>> = {
  'socket.io': '4.8.3',
  'engine.io': '6.6.12',
  ioredis: '5.11.1',
  '@koa/router': '15.7.0',
};

/** The Node majors the Node patches were checked on: 22 and 24 are supported, 20 runs the tests. */
export const PATCHED_NODE_MAJORS: readonly number[] = [20, 22, 24];

/** Where a package is resolved from: engine.io is the one socket.io itself loads. */
const RESOLVED_FROM: Readonly<Record<string, string>> = { 'engine.io': 'socket.io' };

interface Manifest {
  name?: string;
  version?: string;
}

/** The package.json of `name` as loaded from `from` (a file path or URL): the first one up from its entry point. */
function manifestOf(name: string, from: string): { path: string; manifest: Manifest } {
  let dir = dirname(createRequire(from).resolve(name));
  while (dirname(dir) !== dir) {
    const path = join(dir, 'package.json');
    try {
      const manifest = JSON.parse(readFileSync(path, 'utf8')) as Manifest;
      if (manifest.name === name) return { path, manifest };
    } catch {
      // No package.json at this level: keep climbing.
    }
    dir = dirname(dir);
  }
  throw new Error(`library-patches: cannot find the package.json of ${name}`);
}

/** The version of `name` this process loads. */
export function installedVersion(name: string): string {
  const parent = RESOLVED_FROM[name];
  const from = parent ? manifestOf(parent, import.meta.url).path : import.meta.url;
  return manifestOf(name, from).manifest.version ?? 'no version';
}

/**
 * Throws, naming each library and both versions, unless every patched library is installed at its version and Node
 * (`nodeVersion`) is of a patched major.
 */
export function checkPatchedLibraries(
  expected: Readonly<Record<string, string>> = PATCHED_VERSIONS,
  installed: (name: string) => string = installedVersion,
  nodeVersion: string = process.versions.node,
): void {
  const mismatches = Object.entries(expected).flatMap(([name, version]) => {
    const found = installed(name);
    return found === version
      ? []
      : [`${name} ${found} is installed, the patches were written for ${version}`];
  });
  if (!PATCHED_NODE_MAJORS.includes(Number(nodeVersion.split('.')[0]))) {
    mismatches.push(
      `Node ${nodeVersion} is running, the patches were written for Node ${PATCHED_NODE_MAJORS.join(', ')}`,
    );
  }
  if (mismatches.length > 0) {
    throw new Error(
      `src/core/library-patches.ts reaches into library internals: ${mismatches.join('; ')}. ` +
        'Check each patch against the installed version, then update PATCHED_VERSIONS.',
    );
  }
}

/** engine.io's transport, as far as the relay reads it (its types keep these members private). */
interface EngineTransport {
  name: string;
  /** The `ws` connection of the websocket transport: its bufferedAmount is what the kernel has not taken. */
  socket?: { bufferedAmount: number; terminate(): void };
  on(event: 'ready', listener: () => void): unknown;
}

/** engine.io's connection under a socket.io socket, as far as the relay reads it. */
export interface EngineConnection {
  /** Packets waiting for the transport to take them (it takes none while its last send is unwritten). */
  writeBuffer: { data?: unknown }[];
  transport: EngineTransport;
  close(discard: boolean): unknown;
  on(event: 'upgrade', listener: (transport: EngineTransport) => void): unknown;
}

/** engine.io: a connection with its private transport and write buffer. */
export function engineConnection(conn: Socket['conn']): EngineConnection {
  return conn as unknown as EngineConnection;
}

/**
 * socket.io/engine.io: attaches a server's engine to an emitter of the HTTP server's 'request' and 'upgrade'
 * events instead of the HTTP server itself (engine.io only listens for those two and takes over the listeners).
 */
export function attachToEmitter(io: SocketServer, emitter: EventEmitter): void {
  io.attach(emitter as unknown as HttpServer);
}

/** engine.io's `ws` server (private), as far as the relay wraps it. */
interface UpgradeHandler {
  handleUpgrade(
    req: IncomingMessage & { _query?: Record<string, string> },
    socket: Duplex,
    head: Buffer,
    done: (websocket: unknown) => void,
  ): void;
}

const uncork = (socket: Duplex) => socket.uncork();

/**
 * engine.io/ws: a new session's WebSocket handshake leaves in one write instead of two. ws writes the 101 answer
 * and engine.io writes the session's `open` packet later in the same turn (after a microtask); the socket is
 * corked across that turn. Only protocol 4 sessions: engine.io refuses others after the 101 by destroying the
 * socket, which would drop corked bytes. Errors before the 101 never reach ws (engine.io answers them itself),
 * and ws's own refusals end the socket, which writes what was corked.
 */
export function coalesceHandshakeWrites(io: SocketServer): void {
  const ws = (io.engine as unknown as { ws?: UpgradeHandler }).ws;
  if (!ws) return;
  const handleUpgrade = ws.handleUpgrade.bind(ws);
  ws.handleUpgrade = (req, socket, head, done) => {
    if (req._query?.EIO === '4' && req._query.sid === undefined) {
      socket.cork();
      setImmediate(uncork, socket);
    }
    handleUpgrade(req, socket, head, done);
  };
}

/** What socket.io (its handshake) and the relay (clientIp) read of a connection's handshake request. */
interface HandshakeRequest {
  headers: IncomingMessage['headers'];
  url?: string | undefined;
  _query?: Record<string, string>;
  socket: { remoteAddress?: string | undefined; encrypted?: boolean };
  connection: { remoteAddress?: string | undefined; encrypted?: boolean };
}

/**
 * engine.io: an upgrade's stand-in response (its `WebSocketResponse`) stays referenced by the connection's
 * `close` listener, and with it the whole handshake request. The relay's middleware runs after engine.io's CORS
 * one, the last that reads the response's request; engine.io answers upgrades through the socket itself.
 */
export function releaseUpgradeResponses(io: SocketServer): void {
  io.engine.use((_req: IncomingMessage, res: ServerResponse, next: () => void) => {
    if (!(res instanceof ServerResponse)) (res as unknown as { req: unknown }).req = undefined;
    next();
  });
}

/**
 * engine.io/socket.io: a connection keeps its handshake's IncomingMessage (`conn.request`, socket.io's
 * `socket.request`) for its whole life. Once the socket is connected it is replaced by the few fields socket.io
 * builds a later namespace's handshake from (the same objects, already held by `socket.handshake`).
 */
export function releaseHandshakeRequest(socket: Socket): void {
  const conn = socket.conn as unknown as { request: HandshakeRequest };
  const { headers, url, _query, socket: peer } = conn.request;
  const address = { remoteAddress: peer.remoteAddress, encrypted: peer.encrypted === true };
  conn.request = { headers, url, _query, socket: address, connection: address };
}

/**
 * ioredis: its failover detector opens its own connection to each sentinel and listens for nothing but messages
 * on them, so a sentinel going away prints "[ioredis] Unhandled error event" to stderr (plain text among the JSON
 * log lines) on every reconnect attempt. The same outage already reaches the client's own 'error' events (and so
 * the outage log and metrics), so these connections' errors are dropped where the connector makes them.
 */
export function quietFailoverDetector(client: Redis): Redis {
  const connector = (
    client as unknown as { connector?: { connectToSentinel?: (...args: unknown[]) => Redis } }
  ).connector;
  const connect = connector?.connectToSentinel;
  if (connector && connect) {
    connector.connectToSentinel = (...args) => connect.apply(connector, args).on('error', () => {});
  }
  return client;
}

/** ioredis: a cluster subscriber's sharded connections, one per master (ioredis keeps the group private). */
export function shardedSubscriberConnections(client: Cluster): Redis[] | undefined {
  const group = (
    client as unknown as {
      shardedSubscribers?: { shardedSubscribers: Map<string, { getInstance(): Redis | null }> };
    }
  ).shardedSubscribers;
  return group && [...group.shardedSubscribers.values()].flatMap((sub) => sub.getInstance() ?? []);
}

/** Node: the request whose body was arriving on a server connection (its parser's, private), if any. */
export function requestInBody(socket: Duplex): IncomingMessage | undefined {
  const incoming = (socket as { parser?: { incoming?: IncomingMessage | null } }).parser?.incoming;
  return incoming && !incoming.complete ? incoming : undefined;
}

/** Node: the response it is writing on a server connection now (`_httpMessage`; the others wait behind it). */
export function currentResponse(socket: Duplex): ServerResponse | undefined {
  return (socket as { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
}

/**
 * Node: puts a socket through an HTTP server's connection handling again, as if just accepted. 'connection' is the
 * event net.Server hands new sockets to http.Server by; Node documents no other way in.
 */
export function handOverAgain(server: HttpServer, socket: Duplex): void {
  server.emit('connection', socket);
}

/** @koa/router: the path pattern of the route that matched the request, e.g. `/v1/sync/:id`. */
export function matchedRoute(ctx: Context): string | undefined {
  return (ctx as { _matchedRoute?: string })._matchedRoute;
}
