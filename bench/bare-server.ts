/**
 * The benchmark's baseline: the least a server can do to answer `GET /v1/sync/{id}` from Redis — node:http, one
 * ioredis GET, the stored JSON spliced into a hand-built `{success:true,data}` envelope. No middleware, no rate
 * limit, no validation, no read grace. The relay is measured against it (bench/run.ts starts it as a child).
 *
 * Environment: PORT, REDIS_URL, KEY_PREFIX (default `relay:`).
 */
import { createServer, type ServerResponse } from 'node:http';
import { Redis } from 'ioredis';

const port = Number(process.env.PORT);
const prefix = process.env.KEY_PREFIX ?? 'relay:';
// The same client options as the relay's store client where they matter for speed.
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { enableAutoPipelining: true });

const SYNC_PATH = /^\/v1\/sync\/([A-Za-z0-9_:-]{1,200})$/;
const NOT_FOUND = '{"success":false,"error":{"code":"NOT_FOUND","message":"No record."}}';

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

const server = createServer((req, res) => {
  const match = req.method === 'GET' ? SYNC_PATH.exec(req.url ?? '') : null;
  if (!match) return req.url === '/healthz' ? send(res, 200, '{"success":true}') : send(res, 404, NOT_FOUND);
  redis.get(`${prefix}sync:${match[1]}`).then(
    (value) =>
      value === null ? send(res, 404, NOT_FOUND) : send(res, 200, `{"success":true,"data":${value}}`),
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
