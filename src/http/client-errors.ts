import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../log.js';
import { envelope } from './error-envelope.js';
import { AppError } from './errors.js';
import { requestIdFrom } from './request-id.js';

/** What Node's parser failed on, as the one error type; undefined when no answer can help (the peer is gone). */
function toAppError(code: string | undefined): AppError | undefined {
  switch (code) {
    case 'ECONNRESET':
    case 'EPIPE':
      return undefined;
    case 'HPE_HEADER_OVERFLOW':
      return new AppError('HEADERS_TOO_LARGE', 'The request headers are too large.');
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new AppError('PAYLOAD_TOO_LARGE', 'The request body is larger than this endpoint accepts.');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError('REQUEST_TIMEOUT', 'The request took too long to arrive.');
    default:
      return new AppError('BAD_REQUEST', 'The request line or headers are malformed.');
  }
}

export interface Refusal {
  status: number;
  headers: Record<string, string | number>;
  body: string;
}

/**
 * An answer written outside Koa (the server refusing a request before or instead of the app), in the envelope
 * (docs/api.md#envelope-and-errors) with the headers Koa's answers carry. The connection closes after it: what follows on it cannot be trusted.
 */
export function refusal(err: AppError, requestId: string = randomUUID()): Refusal {
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
 * Calls `then` once no answer is owed on the connection: Node writes a connection's responses in order, the one
 * in progress in `_httpMessage` and the others queued behind it, each taking the socket when the one before
 * finishes. Gives up (destroying nothing itself) if the connection closes first.
 */
function afterOwedAnswers(socket: Duplex, then: () => void): void {
  const current = (socket as { _httpMessage?: ServerResponse | null })._httpMessage;
  if (socket.destroyed) return;
  if (!current) {
    then();
    return;
  }
  // Node hands the socket to the next queued response in its own 'finish' listener, which runs before this one.
  const again = () => setImmediate(() => afterOwedAnswers(socket, then));
  if (current.writableFinished) again();
  else current.once('finish', again).once('close', again);
}

/**
 * Whether the error cut a request off mid-body (the client went away, or sent garbage as its body) while the
 * app is still reading it: that request will never complete, so neither will its answer; destroying the
 * connection tells the app it was aborted. An answer already written for it (the front door's refusal of a
 * framing it cannot read) is still sent.
 */
function abandonsIncompleteRequest(socket: Duplex): boolean {
  const incoming = (socket as { parser?: { incoming?: IncomingMessage | null } }).parser?.incoming;
  if (!incoming || incoming.complete) return false;
  const current = (socket as { _httpMessage?: ServerResponse | null })._httpMessage;
  return !(current?.req === incoming && current.writableEnded);
}

/**
 * Requests Node rejects before Koa sees them (bad request line or headers, headers too large, too slow, an
 * Expect other than 100-continue) get the envelope too. Answers already owed on the connection (a valid request
 * before the garbage, pipelined) are sent first, then the refusal, and the connection closes.
 */
export function answerClientErrors(server: Server, log: Logger): void {
  // The parser reports every later packet of a broken connection again; it is answered once.
  const answered = new WeakSet<Duplex>();
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (answered.has(socket)) return;
    answered.add(socket);
    const answer = toAppError(err.code);
    log.debug('client error', { code: err.code, status: answer?.status });
    if (!answer || abandonsIncompleteRequest(socket)) {
      socket.destroy();
      return;
    }
    afterOwedAnswers(socket, () => {
      // An owed answer that closes its connection (Connection: close, a refusal of its own) is the last word.
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
