import type { IncomingMessage } from 'node:http';

/**
 * The client address by the rule Koa applies to HTTP requests (app.ts: `proxy` when TRUST_PROXY_HOPS > 0, and
 * `maxIpsCount` = TRUST_PROXY_HOPS): the left-most of the last `hops` X-Forwarded-For entries, else the socket
 * address. socket.io handshakes never pass through Koa, yet their per-IP limits must count the same address.
 */
export function clientIp(req: IncomingMessage, trustProxyHops: number): string {
  const socketAddress = req.socket.remoteAddress ?? '';
  if (trustProxyHops === 0) return socketAddress;
  // Node joins repeated X-Forwarded-For headers into one comma-separated value, as Koa reads it.
  const header = [req.headers['x-forwarded-for'] ?? []].flat().join(',');
  const entries = header ? header.split(',').map((entry) => entry.trim()) : [];
  return entries.slice(-trustProxyHops)[0] || socketAddress;
}
