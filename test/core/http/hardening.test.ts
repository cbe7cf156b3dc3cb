import { spawnSync } from 'node:child_process';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { get as httpGet } from 'node:http';
import { expect } from 'chai';
import { registry } from '../../../src/core/metrics.js';
import { loadConfig } from '../../../src/config.js';
import {
  errorBody,
  get,
  post,
  request,
  startTestApi,
  testEnv,
  type Reply,
  type TestApi,
} from '../../helpers/api.js';
import {
  openSocket,
  parseReplies,
  parseReply,
  rawExchange,
  rawReplies,
  type RawReply,
} from '../../helpers/raw-http.js';
import { redis } from '../../helpers/redis.js';
import { waitFor } from '../../helpers/wait.js';

const action = { chain: 'btc', wkIdentity: 'pair-1', action: 'txid', payload: 'abcd' };

function send(
  api: TestApi,
  path: string,
  init: { method?: string; body?: string | Buffer; headers?: Record<string, string> },
): Promise<Reply> {
  return request(api.url, path, { method: init.method ?? 'POST', headers: init.headers, body: init.body });
}

/**
 * The envelope a refusal outside Koa must carry: nosniff, its X-Request-Id header (the client's sane one, else a
 * new one) repeated in the body.
 */
function expectRawEnvelope(
  reply: RawReply,
  status: number,
  code: string,
  message: string,
  requestId: string | RegExp = /^[0-9a-f-]{36}$/,
): void {
  expect(reply.status).to.equal(status);
  expect(reply.headers['content-type']).to.equal('application/json; charset=utf-8');
  expect(reply.headers['x-content-type-options']).to.equal('nosniff');
  if (typeof requestId === 'string') expect(reply.headers['x-request-id']).to.equal(requestId);
  else expect(reply.headers['x-request-id']).to.match(requestId);
  expect(reply.body).to.deep.equal({
    success: false,
    error: { code, message, requestId: reply.headers['x-request-id'] },
  });
}

describe('HTTP hardening', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(() => api.stop());

  describe('paths are exact: one spelling of /v1, counted by the limiter', () => {
    let limited: TestApi;
    before(async () => {
      limited = await startTestApi({ RATE_LIMIT_POINTS: '3' });
    });
    after(() => limited.stop());

    it('/V1/… and other spellings are 404 and write nothing', async () => {
      for (const path of ['/V1/action', '/v1/Action', '/V1/sync', '/v1/action/']) {
        const res = await post(api.url, path, action);
        expect(res.status, path).to.equal(404);
        expect(res.body).to.deep.equal(errorBody(res, 'NOT_FOUND', 'There is no such endpoint.'));
      }
      const read = await get(api.url, '/V1/sync/wallet-1');
      expect(read.body).to.deep.equal(errorBody(read, 'NOT_FOUND', 'There is no such endpoint.'));
      expect(await redis().keys('relay:action:*')).to.deep.equal([]);
    });

    it('the global limiter counts every /v1 request, whatever its method or outcome', async () => {
      const remaining: (string | null)[] = [];
      for (const [method, path] of [
        ['GET', '/v1/nope'],
        ['PROPFIND', '/v1/sync'],
        ['DELETE', '/v1/action/x'],
      ] as const) {
        const res = await request(limited.url, path, { method });
        remaining.push(res.headers.get('ratelimit-remaining'));
      }
      expect(remaining).to.deep.equal(['2', '1', '0']);
      expect((await get(limited.url, '/v1/services')).status).to.equal(429);
      const upper = await get(limited.url, '/V1/services');
      expect(upper.status).to.equal(404);
      expect(upper.headers.get('ratelimit-limit')).to.equal(null);
    });
  });

  describe('status codes as docs/api.md#status-codes says', () => {
    it('an unknown path is 404 whatever the method; a known one with another method is 405 with Allow', async () => {
      for (const method of ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'PROPFIND', 'MKCOL']) {
        const res = await send(api, '/v1/nope', { method });
        expect(res.status, method).to.equal(404);
        expect(res.body).to.deep.equal(errorBody(res, 'NOT_FOUND', 'There is no such endpoint.'));
      }
      const res = await send(api, '/v1/action', { method: 'PROPFIND' });
      expect(res.status).to.equal(405);
      expect(res.headers.get('allow')).to.equal('POST');
      expect(res.body.error.code).to.equal('METHOD_NOT_ALLOWED');
    });

    it('an empty body, or an application/json POST with no body at all, is INVALID_JSON', async () => {
      for (const body of ['', '   ', undefined]) {
        const res = await send(api, '/v1/action', { body, headers: { 'content-type': 'application/json' } });
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(res.body).to.deep.equal(errorBody(res, 'INVALID_JSON', 'The request body is not valid JSON.'));
      }
    });

    it('null, a string or a number as the body "must be a JSON object"', async () => {
      for (const body of ['null', '"x"', '5', '[]']) {
        const res = await post(api.url, '/v1/sync', body);
        expect(res.body).to.deep.equal(
          errorBody(res, 'INVALID_JSON', 'The request body must be a JSON object.'),
        );
      }
    });

    it('a field that may take several forms gets one detail saying which', async () => {
      const utxo = await post(api.url, '/v1/action', {
        ...action,
        utxos: [{ txid: 'ab', vout: -1, satoshis: '1.5' }],
      });
      expect(utxo.body.error.details).to.deep.equal([
        {
          field: '/body/utxos/0/vout',
          message: 'must be an integer from 0 to 100000, as a number or a digit string',
        },
        {
          field: '/body/utxos/0/satoshis',
          message: 'must be an integer from 0 to 10^18, as a number or a digit string',
        },
      ]);
      const token = await post(api.url, '/v1/token', { wkIdentity: 'pair-1' });
      expect(token.body.error.details).to.deep.equal([
        { field: '/body', message: 'must be a body with keyToken, walletToken or both' },
      ]);
    });

    it('validation details carry no duplicates, no `must match "then" schema`, one detail per anyOf field', async () => {
      const res = await post(api.url, '/v1/action', { ...action, action: 'tx', path: 5, payload: 'zz' });
      expect(res.status).to.equal(400);
      expect(res.body.error.details).to.deep.equal([
        { field: '/body/path', message: 'must be a BIP32-style path such as 0-0, or empty' },
        { field: '/body/payload', message: 'must match pattern "^(?:[0-9a-fA-F]{2})+$"' },
      ]);
      const missing = await post(api.url, '/v1/action', {
        ...action,
        chain: 'eth',
        action: 'tx',
        payload: '1',
      });
      expect(missing.body.error.details).to.deep.equal([
        { field: '/body/path', message: "must have required property 'path'" },
        { field: '/body/payload', message: 'must be a JSON object encoded as a string' },
      ]);
    });
  });

  describe('Content-Encoding', () => {
    const json = JSON.stringify(action);
    const codings: [string, (b: Buffer) => Buffer][] = [
      ['gzip', gzipSync],
      ['deflate', deflateSync],
      ['br', brotliCompressSync],
    ];

    for (const [coding, compress] of codings) {
      it(`${coding}: a compressed body is accepted; one that does not decompress is 400`, async () => {
        const headers = { 'content-type': 'application/json', 'content-encoding': coding };
        const ok = await send(api, '/v1/action', { body: compress(Buffer.from(json)), headers });
        expect(ok.status).to.equal(200);
        expect(ok.body.data.payload).to.equal('abcd');
        await redis().del('relay:action:pair-1');
        const broken = await send(api, '/v1/action', { body: json, headers });
        expect(broken.status).to.equal(400);
        expect(broken.body).to.deep.equal(
          errorBody(broken, 'INVALID_JSON', 'The request body could not be decompressed.'),
        );
        const truncated = compress(Buffer.from(json));
        const cut = await send(api, '/v1/action', {
          body: truncated.subarray(0, truncated.length - 4),
          headers,
        });
        expect(cut.status).to.equal(400);
        expect(await redis().keys('relay:action:*')).to.deep.equal([]);
      });
    }

    it('an unsupported coding is 415; a gzip bomb over the limit is 413', async () => {
      for (const coding of ['compress', 'zstd', 'gzip, br', 'bogus', 'constructor', 'toString']) {
        const res = await send(api, '/v1/action', {
          body: json,
          headers: { 'content-type': 'application/json', 'content-encoding': coding },
        });
        expect(res.status, coding).to.equal(415);
        expect(res.body).to.deep.equal(
          errorBody(res, 'UNSUPPORTED_MEDIA_TYPE', 'The request body uses an unsupported Content-Encoding.'),
        );
      }
      const bomb = gzipSync(Buffer.from(JSON.stringify({ ...action, payload: 'a'.repeat(3_000_000) })));
      const res = await send(api, '/v1/action', {
        body: bomb,
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      });
      expect(res.status).to.equal(413);
      expect(await redis().keys('relay:action:*')).to.deep.equal([]);
    });

    for (const coding of ['identity', 'gzip']) {
      it(`a ${coding} body cut off mid-stream is a 400 in the log, not a 500 with a stack`, async () => {
        const socket = await openSocket(api.url);
        const part =
          coding === 'gzip' ? gzipSync(Buffer.from(json)).subarray(0, 10) : Buffer.from(json.slice(0, 10));
        socket.write(
          `POST /v1/action HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
            `Content-Encoding: ${coding}\r\nContent-Length: 1000\r\nX-Request-Id: cut-${coding}\r\n\r\n`,
        );
        socket.write(part);
        await new Promise((resolve) => setTimeout(resolve, 50));
        socket.destroy();
        const line = await waitFor('the access log line', () =>
          api.logs.find((l) => l.requestId === `cut-${coding}` && l.msg === 'request'),
        );
        expect(line.status).to.equal(400);
        expect(api.logs.filter((l) => l.requestId === `cut-${coding}` && l.level === 'error')).to.deep.equal(
          [],
        );
      });
    }
  });

  describe('UTF-8 only, stored byte for byte', () => {
    it('a payload with non-ASCII and astral characters round-trips exactly, in Redis and back', async () => {
      const payload = 'héllo ✓ 𝄞 😀 \u2028 \u0000 "quoted" \\ end';
      const res = await post(api.url, '/v1/action', { ...action, payload });
      expect(res.status).to.equal(200);
      expect(res.body.data.payload).to.equal(payload);
      const stored = await redis().getBuffer('relay:action:pair-1');
      expect(stored!.includes(Buffer.from(JSON.stringify(payload).slice(1, -1), 'utf8'))).to.equal(true);
      expect(JSON.parse(stored!.toString('utf8')).payload).to.equal(payload);
      expect((await get(api.url, '/v1/action/pair-1')).body.data.payload).to.equal(payload);
    });

    it('invalid UTF-8 bytes are 400 and Redis is untouched', async () => {
      const head = Buffer.from('{"chain":"btc","wkIdentity":"pair-1","action":"txid","payload":"ab');
      const tail = Buffer.from('cd"}');
      for (const bad of [[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf4, 0x90, 0x80, 0x80]]) {
        const body = Buffer.concat([head, Buffer.from(bad), tail]);
        const res = await send(api, '/v1/action', { body, headers: { 'content-type': 'application/json' } });
        expect(res.status, bad.join(',')).to.equal(400);
        expect(res.body).to.deep.equal(
          errorBody(res, 'INVALID_JSON', 'The request body is not valid UTF-8.'),
        );
      }
      expect(await redis().keys('relay:action:*')).to.deep.equal([]);
    });

    it('a body declared in another charset is 415; utf-8 declared is fine', async () => {
      const body = Buffer.from(JSON.stringify({ ...action, payload: 'caf\u00e9' }), 'latin1');
      for (const charset of ['iso-8859-1', 'utf-16', 'windows-1252']) {
        const res = await send(api, '/v1/action', {
          body,
          headers: { 'content-type': `application/json; charset=${charset}` },
        });
        expect(res.status, charset).to.equal(415);
        expect(res.body).to.deep.equal(
          errorBody(res, 'UNSUPPORTED_MEDIA_TYPE', 'The request body must be UTF-8 encoded JSON.'),
        );
      }
      expect(await redis().keys('relay:action:*')).to.deep.equal([]);
      const ok = await post(api.url, '/v1/action', action, {
        'content-type': 'Application/JSON; charset=UTF-8',
      });
      expect(ok.status).to.equal(200);
    });
  });

  describe("Node's parser errors in the envelope", () => {
    it('a malformed request line or header → 400', async () => {
      expectRawEnvelope(
        await rawExchange(api.url, 'GARBAGE\r\n\r\n'),
        400,
        'BAD_REQUEST',
        'The request line or headers are malformed.',
      );
      expectRawEnvelope(
        await rawExchange(api.url, 'GET /v1/services HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n'),
        400,
        'BAD_REQUEST',
        'The request line or headers are malformed.',
      );
    });

    it('headers over the limit → 431', async () => {
      const reply = await rawExchange(
        api.url,
        `GET /v1/services HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      );
      expectRawEnvelope(reply, 431, 'HEADERS_TOO_LARGE', 'The request headers are too large.');
    });

    it('an Expect other than 100-continue → 417, echoing the request id', async () => {
      const reply = await rawExchange(
        api.url,
        'POST /v1/action HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nX-Request-Id: expect-1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
      );
      expectRawEnvelope(
        reply,
        417,
        'EXPECTATION_FAILED',
        'Only "Expect: 100-continue" is supported.',
        'expect-1',
      );
      expect(await redis().keys('relay:action:*')).to.deep.equal([]);
    });

    it('an HTTP/1.1 request without Host → 400, nothing written', async () => {
      for (const request of [
        'GET /v1/services HTTP/1.1\r\n\r\n',
        `POST /v1/action HTTP/1.1\r\nX-Request-Id: no-host\r\nContent-Type: application/json\r\nContent-Length: ${JSON.stringify(action).length}\r\n\r\n${JSON.stringify(action)}`,
      ]) {
        const reply = await rawExchange(api.url, request);
        expectRawEnvelope(reply, 400, 'BAD_REQUEST', 'The request has no Host header.', /./);
      }
      expect(await redis().keys('relay:action:*')).to.deep.equal([]);
    });

    it('a Transfer-Encoding other than chunked → 400 (not a closed connection), nothing written', async () => {
      const send = (encoding: string) =>
        rawExchange(
          api.url,
          `POST /v1/action HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: ${encoding}\r\n\r\n${JSON.stringify(action)}`,
        );
      // Node's parser emits these requests, then fails on their bodies: the raw request guard refuses them.
      for (const encoding of ['xchunked', 'gzip', 'identity']) {
        const reply = await send(encoding);
        expectRawEnvelope(
          reply,
          400,
          'BAD_REQUEST',
          'The request has a Transfer-Encoding other than chunked.',
        );
      }
      // This one the parser refuses before it is a request.
      const late = await send('chunked, identity');
      expectRawEnvelope(late, 400, 'BAD_REQUEST', 'The request line or headers are malformed.');
      expect(await redis().keys('relay:action:*')).to.deep.equal([]);
    });

    describe('a valid request followed by garbage on the same connection: its answer first, then the 400', () => {
      const services = 'GET /v1/services HTTP/1.1\r\nHost: x\r\n\r\n';
      const write = (id: string) => {
        const body = JSON.stringify({ ...action, wkIdentity: id });
        return `POST /v1/action HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      };
      for (const [name, request, statuses] of [
        ['a GET, then a bad request line', `${services}GARBAGE\r\n\r\n`, [200]],
        ['a GET, then binary bytes', `${services}\u0000\u0001\u0002\r\n\r\n`, [200]],
        ['a GET, then a bad header', `${services}GET / HTTP/1.1\r\nBad Header: y\r\n\r\n`, [200]],
        ['two pipelined GETs, then garbage', `${services}${services}GARBAGE\r\n\r\n`, [200, 200]],
        ['a POST, then garbage', `${write('garbage-after')}GARBAGE\r\n\r\n`, [200]],
      ] as const) {
        it(name, async () => {
          const { replies, closed } = await rawReplies(api.url, request);
          expect(replies.map((reply) => reply.status)).to.deep.equal([...statuses, 400]);
          for (const reply of replies.slice(0, -1)) expect(reply.body.success).to.equal(true);
          expectRawEnvelope(
            replies.at(-1)!,
            400,
            'BAD_REQUEST',
            'The request line or headers are malformed.',
          );
          expect(closed).to.equal(true);
        });
      }

      it('the write before the garbage is stored', async () => {
        await rawReplies(api.url, `${write('stored-before-garbage')}GARBAGE\r\n\r\n`);
        expect(await redis().exists('relay:action:stored-before-garbage')).to.equal(1);
      });
    });

    it('headers that never finish → 408', async () => {
      const slow = await startTestApi({ HTTP_REQUEST_TIMEOUT_MS: '300' });
      try {
        const reply = await rawExchange(slow.url, 'GET /v1/services HTTP/1.1\r\nHost: x\r\n');
        expectRawEnvelope(reply, 408, 'REQUEST_TIMEOUT', 'The request took too long to arrive.');
      } finally {
        await slow.stop();
      }
    });
  });

  describe('bodies cut off by a malformed chunk or by time, and CONNECT: answered, not dropped', () => {
    const head =
      'POST /v1/action HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n';
    const body = JSON.stringify(action);
    const size = body.length.toString(16);
    for (const [name, chunks] of [
      ['a chunk size that is not hex', `zz\r\n${body}\r\n0\r\n\r\n`],
      ['a chunk size too large for any number', `fffffffffffffffffff\r\n${body}\r\n0\r\n\r\n`],
      ['a negative chunk size', `-${size}\r\n${body}\r\n0\r\n\r\n`],
      ['chunk data without its CRLF', `${size}\r\n${body}XX0\r\n\r\n`],
      ['a chunk size line ending in CR alone', `${size}\r${body}\r\n0\r\n\r\n`],
      ['a chunk extension over 16 KiB', `${size};ext=${'e'.repeat(20_000)}\r\n${body}\r\n0\r\n\r\n`],
      ['a malformed trailer', `${size}\r\n${body}\r\n0\r\nBad Trailer: x\r\n\r\n`],
    ] as const) {
      it(`${name} → 400, nothing written`, async () => {
        const requestId = `chunk-${name.replaceAll(' ', '-')}`;
        const reply = await rawExchange(api.url, `${head}X-Request-Id: ${requestId}\r\n\r\n${chunks}`);
        expectRawEnvelope(
          reply,
          400,
          'BAD_REQUEST',
          "The request body's chunked encoding is malformed.",
          requestId,
        );
        // The app, which was reading the body, is done with the request too.
        await waitFor('the access log line', () =>
          api.logs.find((line) => line.requestId === requestId && line.msg === 'request'),
        );
        expect(await redis().keys('relay:action:*')).to.deep.equal([]);
      });
    }

    it('CONNECT → 400 in the envelope', async () => {
      const { replies, closed } = await rawReplies(
        api.url,
        'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nX-Request-Id: connect-1\r\n\r\n',
      );
      expect(replies).to.have.length(1);
      expectRawEnvelope(replies[0]!, 400, 'BAD_REQUEST', 'CONNECT is not supported.', 'connect-1');
      expect(closed).to.equal(true);
    });

    it('bodies that never finish → 408 each, with the request id the app gave them; nothing written', async () => {
      // Enough answer slots that every request is admitted and reading its body when time runs out.
      const slow = await startTestApi({ HTTP_REQUEST_TIMEOUT_MS: '300', HTTP_ANSWERS_PER_IP: '20' });
      try {
        const partial = `POST /v1/action HTTP/1.1\r\nHost: x\r\nX-Request-Id: slow-body\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`;
        const replies = await Promise.all(Array.from({ length: 20 }, () => rawExchange(slow.url, partial)));
        for (const reply of replies)
          expectRawEnvelope(
            reply,
            408,
            'REQUEST_TIMEOUT',
            'The request took too long to arrive.',
            'slow-body',
          );
        await waitFor('every access log line', () =>
          slow.logs.filter((line) => line.requestId === 'slow-body' && line.msg === 'request').length === 20
            ? true
            : undefined,
        );
        expect(await redis().keys('relay:action:*')).to.deep.equal([]);
      } finally {
        await slow.stop();
      }
    });

    it('a client resetting its connection mid-request is a debug line, not an error', async () => {
      const seen = api.logs.length;
      for (let i = 0; i < 5; i++) {
        const socket = await openSocket(api.url);
        socket.on('error', () => {});
        socket.write(
          `POST /v1/action HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n`,
        );
        // "100 Continue": the request is in the app's hands, reading its body, when the client resets.
        await new Promise((resolve) => socket.once('data', resolve));
        socket.resetAndDestroy();
      }
      const gone = await waitFor('the five resets to be logged', () => {
        const lines = api.logs.slice(seen).filter((line) => line.msg === 'client went away');
        return lines.length === 5 ? lines : undefined;
      });
      for (const line of gone) expect(line).to.include({ level: 'debug', code: 'ECONNRESET' });
      expect(api.logs.slice(seen).filter((line) => line.level === 'error')).to.deep.equal([]);
    });
  });

  describe('Upgrade offers on REST paths', () => {
    const services = { success: true, data: { onramp: true, offramp: true, swap: true } };
    const h2c =
      'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n';

    it('an h2c offer (curl --http2) is ignored: the request is answered over HTTP/1.1, the connection kept', async () => {
      const { replies, closed } = await rawReplies(
        api.url,
        `GET /v1/services HTTP/1.1\r\nHost: x\r\n${h2c}X-Request-Id: h2c-1\r\n\r\n`,
        1,
      );
      expect(closed).to.equal(false);
      expect(replies).to.have.length(1);
      expect(replies[0]!.status).to.equal(200);
      expect(replies[0]!.headers['x-request-id']).to.equal('h2c-1');
      expect(replies[0]!.headers['x-content-type-options']).to.equal('nosniff');
      expect(replies[0]!.body).to.deep.equal(services);
    });

    it('an h2c offer with a body: the write is stored, and a request pipelined after it answered too', async () => {
      const body = JSON.stringify({ ...action, wkIdentity: 'h2c-pair' });
      const { replies } = await rawReplies(
        api.url,
        `POST /v1/action HTTP/1.1\r\nHost: x\r\n${h2c}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
          'GET /v1/action/h2c-pair HTTP/1.1\r\nHost: x\r\n\r\n',
        2,
      );
      expect(replies.map((reply) => reply.status)).to.deep.equal([200, 200]);
      expect(replies[1]!.body).to.deep.equal(replies[0]!.body);
      expect(JSON.parse((await redis().get('relay:action:h2c-pair'))!)).to.deep.equal(replies[0]!.body.data);
    });

    it('a WebSocket upgrade to a REST path → 400 in the envelope', async () => {
      const reply = await rawExchange(
        api.url,
        'GET /v1/action/x HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
          'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nX-Request-Id: ws-rest\r\n\r\n',
      );
      expectRawEnvelope(
        reply,
        400,
        'BAD_REQUEST',
        'This path does not accept WebSocket connections.',
        'ws-rest',
      );
    });
  });

  it('every answer says nosniff: success, 404, 405, health, 429', async () => {
    const limited = await startTestApi({ RATE_LIMIT_POINTS: '1' });
    try {
      const answers = [
        await get(api.url, '/v1/services'),
        await get(api.url, '/v1/nope'),
        await send(api, '/v1/services', { method: 'DELETE' }),
        await get(api.url, '/healthz'),
        await get(limited.url, '/v1/services'),
      ];
      expect(answers.map((answer) => answer.status)).to.deep.equal([200, 404, 405, 200, 429]);
      for (const answer of answers) expect(answer.headers.get('x-content-type-options')).to.equal('nosniff');
    } finally {
      await limited.stop();
    }
  });

  describe('per-IP budget of bytes written', () => {
    const budget = 2 * 1024 * 1024;
    let small: TestApi;
    before(async () => {
      small = await startTestApi({ WRITE_BUDGET_BYTES: String(budget), WRITE_BUDGET_WINDOW_SECONDS: '900' });
    });
    after(() => small.stop());

    it('actions and sync records draw on one budget shared through Redis; spent → 429 with Retry-After, nothing written', async () => {
      const big = (id: string) => ({ ...action, wkIdentity: id, payload: 'a'.repeat(900_000) });
      const first = await post(small.url, '/v1/action', big('a'));
      expect(first.status).to.equal(200);
      const sync = { chain: 'btc', walletIdentity: 'w', keyXpub: 'xpub1', wkIdentity: 'a' };
      expect((await post(small.url, '/v1/sync', sync)).status).to.equal(200);
      const spentSoFar = Number(await redis().get('relay:rl:bytes:127.0.0.1'));
      expect(spentSoFar).to.equal(
        Buffer.byteLength(JSON.stringify(big('a'))) + Buffer.byteLength(JSON.stringify(sync)),
      );
      // A second instance shares the counter: its write of 900 KB fits, the next one does not.
      const other = await startTestApi({ WRITE_BUDGET_BYTES: String(budget) });
      try {
        expect((await post(other.url, '/v1/action', big('b'))).status).to.equal(200);
      } finally {
        await other.stop();
      }
      const over = await post(small.url, '/v1/action', big('c'));
      expect(over.status).to.equal(429);
      expect(over.body).to.deep.equal(
        errorBody(over, 'RATE_LIMITED', 'Too many bytes written from this address; retry later.'),
      );
      expect(Number(over.headers.get('retry-after'))).to.be.within(1, 900);
      expect(await redis().exists('relay:action:c')).to.equal(0);
      const overSync = await post(small.url, '/v1/sync', { ...sync, walletIdentity: 'w2' });
      expect(overSync.status).to.equal(429);
      expect(await redis().exists('relay:sync:w2')).to.equal(0);
    });

    it('every body read spends it, refused or not; once spent, a valid write is 429 and nothing is written', async () => {
      const deep = `{"a":${'['.repeat(500_000)}${']'.repeat(500_000)}}`;
      const broken = `{"payload":"${'x'.repeat(600_000)}`;
      const invalid = JSON.stringify({ ...action, chain: 'bad chain', payload: 'a'.repeat(100_000) });
      expect((await post(small.url, '/v1/action', deep)).body.error.code).to.equal('INVALID_JSON');
      expect((await post(small.url, '/v1/sync', broken)).body.error.code).to.equal('INVALID_JSON');
      expect((await post(small.url, '/v1/action', invalid)).body.error.code).to.equal('INVALID_PARAMETER');
      const spent = [deep, broken, invalid].reduce((sum, body) => sum + Buffer.byteLength(body), 0);
      expect(Number(await redis().get('relay:rl:bytes:127.0.0.1'))).to.equal(spent);
      // What is left is less than this write.
      const write = { ...action, payload: 'a'.repeat(budget - spent + 1) };
      const over = await post(small.url, '/v1/action', write);
      expect(over.status).to.equal(429);
      expect(over.body).to.deep.equal(
        errorBody(over, 'RATE_LIMITED', 'Too many bytes written from this address; retry later.'),
      );
      expect(await redis().keys('relay:action:*')).to.deep.equal([]);
      // A refused body, too, is refused 429 once the budget is spent.
      const refusedToo = await post(small.url, '/v1/action', deep);
      expect(refusedToo.status).to.equal(429);
    });
    it('reads cost nothing from it', async () => {
      await post(small.url, '/v1/action', action);
      const before = await redis().get('relay:rl:bytes:127.0.0.1');
      for (let i = 0; i < 5; i++) expect((await get(small.url, '/v1/action/pair-1')).status).to.equal(200);
      expect(await redis().get('relay:rl:bytes:127.0.0.1')).to.equal(before);
    });

    it('is configurable, and refuses a budget smaller than one largest action body', () => {
      expect(loadConfig(testEnv({ WRITE_BUDGET_BYTES: '3000000' })).writeBudget).to.deep.equal({
        bytes: 3_000_000,
        windowSeconds: 900,
      });
      expect(() => loadConfig(testEnv({ WRITE_BUDGET_BYTES: '1000' }))).to.throw(
        /^WRITE_BUDGET_BYTES must be/,
      );
    });
  });

  describe('listen backlog (HTTP_BACKLOG)', () => {
    it('defaults to 4096 and refuses a value outside 1–65535, naming the variable', () => {
      expect(loadConfig(testEnv()).httpBacklog).to.equal(4096);
      for (const bad of ['0', '70000', 'lots']) {
        expect(() => loadConfig(testEnv({ HTTP_BACKLOG: bad }))).to.throw(/^HTTP_BACKLOG must be/);
      }
    });

    it('is the accept queue the API listens with', async () => {
      const queued = await startTestApi({ HTTP_BACKLOG: '1234' });
      try {
        const port = new URL(queued.url).port;
        // For a listening socket `ss` shows the backlog as Send-Q.
        const listing = spawnSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' }).stdout;
        const [, , sendQ] = listing.trim().split(/\s+/);
        expect(sendQ).to.equal('1234');
      } finally {
        await queued.stop();
      }
    });
  });

  describe('clients that never read their responses', () => {
    const bigRecord = async (target: TestApi) => {
      const res = await post(target.url, '/v1/action', { ...action, payload: 'f'.repeat(1_000_000) });
      expect(res.status).to.equal(200);
    };
    const pipelined = (count: number) =>
      Array.from(
        { length: count },
        (_, i) => `GET /v1/action/pair-1 HTTP/1.1\r\nHost: x\r\nX-Request-Id: hog-${i}\r\n\r\n`,
      ).join('');

    it('a connection pipelining more requests than allowed is closed; the relay handled at most the cap', async () => {
      const capped = await startTestApi({ HTTP_MAX_PIPELINED: '4' });
      try {
        await bigRecord(capped);
        const sockets = await Promise.all(Array.from({ length: 10 }, () => openSocket(capped.url)));
        const closed = sockets.map((s) => new Promise((resolve) => s.once('close', resolve)));
        for (const socket of sockets) {
          socket.on('error', () => {});
          socket.pause(); // never read
          socket.write(pipelined(50));
        }
        const closedLines = () =>
          capped.logs.filter((l) => l.msg === 'connection closed: too many pipelined requests');
        await waitFor('every connection closed by the relay', () => closedLines().length === 10);
        // A paused socket only notices the close once it reads again.
        for (const socket of sockets) socket.resume();
        await Promise.all(closed);
        const handled = capped.logs.filter(
          (l) => l.msg === 'request' && String(l.requestId).startsWith('hog-'),
        );
        expect(handled.length).to.be.at.most(10 * 4);
        expect(
          capped.logs.filter((l) => l.msg === 'connection closed: too many pipelined requests'),
        ).to.have.length(10);
        const normal = await get(capped.url, '/v1/services');
        expect(normal.status).to.equal(200);
      } finally {
        await capped.stop();
      }
    });

    it('one address has at most HTTP_ANSWERS_PER_IP writes in progress over all its connections; the rest wait, its reads and other addresses do not', async () => {
      const narrow = await startTestApi({ HTTP_ANSWERS_PER_IP: '1' });
      const waiting = async () =>
        (await registry.getSingleMetric('relay_http_answers_waiting')!.get()).values[0]!.value;
      try {
        // A write whose body is still arriving holds the address's only slot.
        const body = JSON.stringify({ ...action, wkIdentity: 'slot-holder' });
        const holder = await openSocket(narrow.url);
        const holderReply = new Promise<Buffer>((resolve) => {
          const chunks: Buffer[] = [];
          holder.on('data', (chunk: Buffer) => {
            chunks.push(chunk);
            if (parseReplies(Buffer.concat(chunks)).length === 1) resolve(Buffer.concat(chunks));
          });
        });
        // Taken once the request reached the app (after the raw request guard's checks).
        const received = new Promise((resolve) =>
          narrow.handle.server.once('request', () => setTimeout(resolve, 0)),
        );
        holder.write(
          `POST /v1/action HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
        );
        await received;
        // The same address's writes on other connections: they wait for the slot.
        const queued = [1, 2].map((n) =>
          post(narrow.url, '/v1/action', { ...action, wkIdentity: `queued-${n}` }),
        );
        await waitFor('two requests waiting', async () => (await waiting()) === 2);
        // Its reads have a pool of their own: served at once.
        expect((await get(narrow.url, '/v1/services')).status).to.equal(200);
        // Another address is served at once.
        const other = await new Promise<number>((resolve, reject) =>
          httpGet(`${narrow.url}/v1/services`, { localAddress: '127.0.0.2' }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          }).once('error', reject),
        );
        expect(other).to.equal(200);
        expect(await waiting()).to.equal(2);
        // The slot holder finishes: every waiting request is served in turn.
        holder.write(body.slice(10));
        expect(parseReplies(await holderReply)[0]!.status).to.equal(200);
        expect((await Promise.all(queued)).map((reply) => reply.status)).to.deep.equal([200, 200]);
        expect(await waiting()).to.equal(0);
        holder.destroy();
      } finally {
        await narrow.stop();
      }
    });

    it("a connection's requests run one at a time: a client that does not read holds at most one unsent response", async () => {
      const patient = await startTestApi({ HTTP_MAX_PIPELINED: '40', HTTP_DRAIN_TIMEOUT_MS: '60000' });
      try {
        await bigRecord(patient);
        const socket = await openSocket(patient.url);
        socket.on('error', () => {});
        socket.pause();
        socket.write(pipelined(30)); // 30 MB of answers: more than any socket buffer takes
        const handled = () =>
          patient.logs.filter((l) => l.msg === 'request' && String(l.requestId).startsWith('hog-')).length;
        await waitFor('the first answers', () => handled() > 0);
        await new Promise((resolve) => setTimeout(resolve, 500));
        // Only what the kernel's buffers took was answered; the rest wait without a Redis read.
        expect(handled()).to.be.below(10);
        socket.destroy();
      } finally {
        await patient.stop();
      }
    });

    it('a response not drained within HTTP_DRAIN_TIMEOUT_MS closes its connection', async () => {
      const strict = await startTestApi({ HTTP_DRAIN_TIMEOUT_MS: '300', HTTP_MAX_PIPELINED: '8' });
      try {
        await bigRecord(strict);
        const socket = await openSocket(strict.url);
        socket.on('error', () => {});
        socket.pause();
        const closed = new Promise((resolve) => socket.once('close', resolve));
        socket.write(pipelined(8));
        await waitFor('the relay closing the connection', () =>
          strict.logs.some((l) => l.msg === 'connection closed: response not drained'),
        );
        socket.resume();
        await closed;
        // Meanwhile and after, others are served.
        expect((await get(strict.url, '/v1/action/pair-1')).status).to.equal(200);
      } finally {
        await strict.stop();
      }
    });

    it('a client reading normally, pipelining within the cap, is served in full', async () => {
      const socket = await openSocket(api.url);
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.write(
        pipelined(3)
          .replace(/\r\n\r\n$/, '\r\nConnection: close\r\n\r\n')
          .replaceAll('pair-1', 'none'),
      );
      await new Promise((resolve) => socket.once('close', resolve));
      const text = Buffer.concat(chunks).toString('utf8');
      expect(text.match(/HTTP\/1\.1 404/g)).to.have.length(3);
      expect(parseReply(Buffer.concat(chunks)).body.error.code).to.equal('NOT_FOUND');
    });
  });
});
