import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { currentResponse, requestInBody } from '../library-patches.js';
import type { Logger } from '../log.js';
import { envelope } from './error-envelope.js';
import { AppError } from '../errors.js';
import { requestIdFrom } from './request-id.js';

/** Whether an error's code says the client closed or reset the connection: its business, not the relay's. */
export function clientGone(code: unknown): boolean {
  return code === 'ECONNRESET' || code === 'EPIPE';
}

/**
 * What Node's parser failed on, as the one error type; undefined when no answer can help (the peer is gone).
 * `inBody`: it failed while a request's body was arriving, which only its chunked framing can make malformed.
 */
function parserErrorAnswer(code: string | undefined, inBody: boolean): AppError | undefined {
  // A client that ends its side mid-body has given up on its request.
  if (clientGone(code) || (inBody && code === 'HPE_INVALID_EOF_STATE')) return undefined;
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError('REQUEST_TIMEOUT', 'The request took too long to arrive.');
    default:
      if (inBody) return new AppError('BAD_REQUEST', "The request body's chunked encoding is malformed.");
      if (code === 'HPE_HEADER_OVERFLOW')
        return new AppError('HEADERS_TOO_LARGE', 'The request headers are too large.');
      return new AppError('BAD_REQUEST', 'The request line or headers are malformed.');
  }
}

interface Refusal {
  status: number;
  headers: Record<string, string | number>;
  body: string;
}

/**
 * An answer written outside Koa (the server refusing a request before or instead of the app), in the envelope
 * (docs/api.md#envelope-and-errors) with the headers Koa's answers carry. The connection closes after it: what follows on it cannot be trusted.
 */
function refusal(err: AppError, requestId: string = randomUUID()): Refusal {
  const body = JSON.stringify(envelope(err, requestId));
  return {
    status: err.status,
    headers: {
      ...err.headers,
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      'X-Request-Id': requestId,
      'X-Content-Type-Options': 'nosniff',
      Connection: 'close',
    },
    body,
  };
}

/** A refusal as a whole HTTP/1.1 response, for a socket Node's HTTP machinery no longer writes to. */
export function rawRefusal(err: AppError, requestId?: string): string {
  const { status, headers, body } = refusal(err, requestId);
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
  return [`HTTP/1.1 ${status} ${STATUS_CODES[status]}`, ...lines, '', body].join('\r\n');
}

/** A refusal through a ServerResponse (in order with the connection's other answers). */
export function writeRefusal(res: ServerResponse, err: AppError, requestId?: string): void {
  const { status, headers, body } = refusal(err, requestId);
  res.writeHead(status, headers);
  res.end(body);
}

/**
 * Calls `then` once no response is pending on the connection: Node writes a connection's responses in order, the one
 * in progress (currentResponse) and the others queued behind it, each taking the socket when the one before
 * finishes. Gives up (destroying nothing itself) if the connection closes first.
 */
function afterPendingResponses(socket: Duplex, then: () => void): void {
  const current = currentResponse(socket);
  if (socket.destroyed) return;
  if (!current) {
    then();
    return;
  }
  // Node hands the socket to the next queued response in its own 'finish' listener, which runs before this one.
  const again = () => setImmediate(() => afterPendingResponses(socket, then));
  if (current.writableFinished) again();
  else current.once('finish', again).once('close', again);
}

/**
 * An answer through a response of the app's, with the request id the app gave it, for a request whose body will
 * never arrive. Node forgets the request once its response is done, so the request is aborted here after it:
 * the app, still reading the body, sees it end and writes nothing more.
 */
function answerThrough(res: ServerResponse, req: IncomingMessage, answer: AppError): void {
  const requestId = res.getHeader('x-request-id');
  res.once('close', () => req.destroy());
  writeRefusal(
    res,
    answer,
    typeof requestId === 'string' ? requestId : requestIdFrom(req.headers['x-request-id']),
  );
}

/**
 * Requests Node rejects before Koa sees them (bad request line or headers, headers too large, too slow, an
 * Expect other than 100-continue) get the envelope too. Responses already pending on the connection (a valid request
 * before the garbage, pipelined) are sent first, then the refusal, and the connection closes.
 */
export function answerClientErrors(server: Server, log: Logger): void {
  // The parser reports every later packet of a broken connection again; it is answered once.
  const answered = new WeakSet<Duplex>();
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (answered.has(socket)) return;
    answered.add(socket);
    const incoming = requestInBody(socket);
    const answer = parserErrorAnswer(err.code, incoming !== undefined);
    log.debug('client error', { code: err.code, status: answer?.status });
    if (!answer) {
      socket.destroy();
      return;
    }
    if (incoming) {
      // A request cut off mid-body (a malformed chunk, a body too slow to arrive) is answered through its own
      // response while nothing of that is written, and the connection closes after it. An answer already
      // complete (the raw request guard's refusal of a framing it cannot read) is sent as it is. Otherwise
      // (queued behind other answers, or half written) only closing the connection ends it.
      const current = currentResponse(socket);
      if (current?.req === incoming && !current.headersSent) {
        answerThrough(current, incoming, answer);
        return;
      }
      if (current?.req !== incoming || !current.writableEnded) {
        socket.destroy();
        return;
      }
    }
    afterPendingResponses(socket, () => {
      // A pending response that closes its connection (Connection: close, a refusal of its own) is the last word.
      if (!socket.writable) socket.destroy();
      else socket.end(rawRefusal(answer), () => socket.destroy());
    });
  });
  server.on('checkExpectation', (req, res) =>
    writeRefusal(
      res,
      new AppError('EXPECTATION_FAILED', 'Only "Expect: 100-continue" is supported.'),
      requestIdFrom(req.headers['x-request-id']),
    ),
  );
}
