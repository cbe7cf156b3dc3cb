/**
 * The benchmark's baseline: the least a server can do to answer `GET /v1/sync/{id}` from Redis — node:http, one
 * ioredis GET, the stored JSON spliced into a hand-built `{success:true,data}` envelope. No middleware, no rate
 * limit, no validation, no read grace. The relay is measured against it (bench/run.ts starts it as a child).
 * `GET /v1/action/{id}` is the same read of the mailbox; with any `If-None-Match` it answers 304 without a body
 * and compares nothing: the read alone, what the relay's 304 is measured above.
 *
 * Environment: PORT, REDIS_URL, KEY_PREFIX (default `relay:`).
 */
import { createServer, type ServerResponse } from 'node:http';
import { Redis } from 'ioredis';

const port = Number(process.env.PORT);
const prefix = process.env.KEY_PREFIX ?? 'relay:';
// The same client options as the relay's store client where they matter for speed.
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { enableAutoPipelining: true });

const READ_PATH = /^\/v1\/(sync|action)\/([A-Za-z0-9_:-]{1,200})$/;
const NOT_FOUND = '{"success":false,"error":{"code":"NOT_FOUND","message":"No record."}}';

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

const server = createServer((req, res) => {
  const match = req.method === 'GET' ? READ_PATH.exec(req.url ?? '') : null;
  if (!match) return req.url === '/healthz' ? send(res, 200, '{"success":true}') : send(res, 404, NOT_FOUND);
  const conditional = req.headers['if-none-match'] !== undefined;
  redis.get(`${prefix}${match[1]}:${match[2]}`).then(
    (value) => {
      if (value === null) return send(res, 404, NOT_FOUND);
      if (!conditional) return send(res, 200, `{"success":true,"data":${value}}`);
      res.writeHead(304);
      res.end();
    },
    () => send(res, 503, '{"success":false}'),
  );
});
server.keepAliveTimeout = 65_000;
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void redis.quit().finally(() => process.exit(0));
});
