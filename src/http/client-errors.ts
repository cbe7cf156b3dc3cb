import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../log.js';
import { envelope } from './error-envelope.js';
import { AppError } from './errors.js';

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

/** A whole HTTP/1.1 response in the error envelope (docs/api.md#envelope-and-errors); the connection closes after it. */
function rawResponse(err: AppError): string {
  const requestId = randomUUID();
  const body = JSON.stringify(envelope(err, requestId));
  return [
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status]}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/**
 * Requests Node rejects before Koa sees them (bad request line or headers, headers too large, too slow, an
 * Expect other than 100-continue) get the envelope too, wherever a response can still be written: the socket
 * is writable and no earlier response on it is half sent (a pipelined one in progress would be corrupted).
 */
export function answerClientErrors(server: Server, log: Logger): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    const answer = toAppError(err.code);
    log.debug('client error', { code: err.code, status: answer?.status });
    const busy = (socket as { _httpMessage?: unknown })._httpMessage != null;
    if (!answer || !socket.writable || busy) {
      socket.destroy();
      return;
    }
    socket.end(rawResponse(answer), () => socket.destroy());
  });
  server.on('checkExpectation', (_req, res) => {
    const err = new AppError('EXPECTATION_FAILED', 'Only "Expect: 100-continue" is supported.');
    const requestId = randomUUID();
    const body = JSON.stringify(envelope(err, requestId));
    res.writeHead(err.status, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      'X-Request-Id': requestId,
      Connection: 'close',
    });
    res.end(body);
  });
}
