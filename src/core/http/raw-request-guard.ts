import { EventEmitter } from 'node:events';
import { ServerResponse, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { rawRefusal, writeRefusal } from './client-errors.js';
import { AppError, unavailable } from '../errors.js';
import { handOverAgain } from '../library-patches.js';
import { requestIdFrom } from './request-id.js';

/** Every answer the server writes (Koa's, socket.io's engine's, Node's own) tells browsers not to sniff it. */
export class RelayResponse<
  Request extends IncomingMessage = IncomingMessage,
> extends ServerResponse<Request> {
  constructor(...args: ConstructorParameters<typeof ServerResponse<Request>>) {
    super(...args);
    this.setHeader('X-Content-Type-Options', 'nosniff');
  }
}

/** The socket.io paths, once their engines are attached to `RawRequestGuard.sockets`. */
export interface SocketPaths {
  /** Whether socket.io serves this request target. */
  owns(url: string): boolean;
  /** Rejects (with an AppError) the handshake of a new session, e.g. over the address's budget. */
  admitHandshake(req: IncomingMessage): Promise<void>;
}

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/** Node answers an HTTP/1.1 request without Host, or with a framing it cannot read, with a bare 400; we do it. */
function malformation(req: IncomingMessage): AppError | undefined {
  if (req.httpVersion === '1.1' && req.headers.host === undefined)
    return new AppError('BAD_REQUEST', 'The request has no Host header.');
  const encoding = req.headers['transfer-encoding'];
  // Node's parser reads only bodies whose last coding is chunked, and fails on others after emitting the request.
  if (encoding !== undefined && encoding.split(',').pop()!.trim().toLowerCase() !== 'chunked')
    return new AppError('BAD_REQUEST', 'The request has a Transfer-Encoding other than chunked.');
  return undefined;
}

/** A refusal written on a socket Node has handed over, which then closes. */
function refuseRaw(req: IncomingMessage, socket: Duplex, refused: AppError): void {
  if (socket.writable)
    socket.end(rawRefusal(refused, requestIdFrom(req.headers['x-request-id'])), () => socket.destroy());
  else socket.destroy();
}

/** The request target's query parameters. */
export function query(req: IncomingMessage): URLSearchParams {
  const url = req.url ?? '/';
  return new URLSearchParams(url.includes('?') ? url.slice(url.indexOf('?') + 1) : '');
}

const offersWebSocket = (req: IncomingMessage) =>
  /(^|,)\s*websocket\s*(,|$)/i.test(req.headers.upgrade ?? '');

/**
 * The HTTP server's only request, upgrade and CONNECT listener: it refuses what no handler should see, in the error
 * envelope, and passes the rest on. socket.io attaches its engines to `sockets`, never to the server itself, so
 * an engine neither sees a request before these checks nor destroys upgrades to paths not its own (it would
 * close an `h2c` offer on a REST path after a second, without an answer).
 *
 * - Every request: HTTP/1.1 without Host, or a Transfer-Encoding other than chunked → 400 BAD_REQUEST.
 * - socket.io requests: JSONP polling (`j=`) → 400 (the apps never use it, and it would get round
 *   CORS_ORIGINS); a new session's handshake must pass `admitHandshake` (→ 429 over the budget).
 * - Upgrade offers: a WebSocket upgrade to a socket.io path goes to its engine; to any other path, 400. Any other
 *   offer (`h2c`) is declined the HTTP/1.1 way: the request is served as if it had not offered anything.
 * - CONNECT (a proxy's method; the relay is none): 400.
 */
export class RawRequestGuard {
  /** What socket.io attaches to instead of the HTTP server; requests reach it past the checks. */
  readonly sockets = new EventEmitter();
  private socketPaths: SocketPaths | undefined;

  constructor(
    private readonly server: Server,
    app: RequestListener,
  ) {
    this.sockets.on('request', app);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => this.request(req, res));
    server.on(
      'upgrade',
      (req: IncomingMessage, socket: Duplex, head: Buffer) => void this.upgrade(req, socket, head),
    );
    // Node closes a CONNECT's connection without a word when nothing listens for it.
    server.on('connect', (req: IncomingMessage, socket: Duplex) => {
      socket.on('error', () => {});
      refuseRaw(req, socket, new AppError('BAD_REQUEST', 'CONNECT is not supported.'));
    });
  }

  /** Sends socket.io's requests to the engines attached to `sockets` from now on. */
  serveSockets(paths: SocketPaths): void {
    this.socketPaths = paths;
  }

  private request(req: IncomingMessage, res: ServerResponse): void {
    const pass = (refused: AppError | undefined) => {
      if (refused) writeRefusal(res, refused, requestIdFrom(req.headers['x-request-id']));
      else this.sockets.emit('request', req, res);
    };
    const malformed = malformation(req);
    // REST requests, the hot path, are passed on in the same tick; only socket.io's may wait for Redis.
    if (malformed || !this.socketPaths?.owns(req.url ?? '/')) pass(malformed);
    else void this.socketRefusal(req).then(pass);
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    // Node took its own listeners off the socket; a reset while this waits must not be an uncaught error.
    socket.on('error', () => {});
    if (!offersWebSocket(req)) {
      this.declineUpgrade(req, socket, head);
      return;
    }
    const refused =
      malformation(req) ??
      (this.socketPaths?.owns(req.url ?? '/')
        ? await this.socketRefusal(req)
        : new AppError('BAD_REQUEST', 'This path does not accept WebSocket connections.'));
    if (!refused) this.sockets.emit('upgrade', req, socket, head);
    else refuseRaw(req, socket, refused);
  }

  private async socketRefusal(req: IncomingMessage): Promise<AppError | undefined> {
    const paths = this.socketPaths;
    if (!paths?.owns(req.url ?? '/')) return undefined;
    const params = query(req);
    if (params.has('j')) return new AppError('BAD_REQUEST', 'JSONP polling is not supported.');
    // A session's later polls and its upgrade carry its id, and CORS preflights are OPTIONS: only a new
    // session's handshake (a GET without sid) is budgeted.
    if (params.has('sid') || req.method !== 'GET') return undefined;
    try {
      await paths.admitHandshake(req);
      return undefined;
    } catch (err) {
      if (err instanceof AppError) return err;
      return unavailable('The relay cannot take new sockets right now; retry shortly.', 1, err);
    }
  }

  /**
   * Serves an upgrade offer's request over HTTP/1.1 on the same connection: Node has already handed the socket
   * over, so the request, without the offer, is put back in front of what remains to be read and the socket
   * goes through the server's connection handling again.
   */
  private declineUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`];
    const raw = req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const [name, value] = [raw[i]!, raw[i + 1]!];
      const lower = name.toLowerCase();
      if (lower === 'upgrade' || lower === 'http2-settings') continue;
      if (lower === 'connection') {
        const kept = value
          .split(',')
          .map((option) => option.trim())
          .filter((option) => option !== '' && !/^(upgrade|http2-settings)$/i.test(option));
        if (kept.length > 0) lines.push(`${name}: ${kept.join(', ')}`);
        continue;
      }
      lines.push(`${name}: ${value}`);
    }
    // Node decodes header bytes as latin1, so this gives back the bytes the client sent.
    socket.unshift(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), head]));
    handOverAgain(this.server, socket);
  }
}
