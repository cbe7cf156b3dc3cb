import type { IncomingMessage } from 'node:http';
import { isIPv6 } from 'node:net';

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

const IPV4_MAPPED = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

/**
 * The key a client is counted under by rate limits and socket caps: its address, except that an IPv6 client is
 * its /64 (`2001:db8:1:2::/64`). One subscriber usually holds a whole /64, so counting single addresses would
 * give each client 2^64 budgets. An IPv4-mapped address counts as the IPv4 address.
 */
export function ipBucket(ip: string): string {
  // Every request asks: an IPv4 address is its own bucket, without the parsing below.
  if (!ip.includes(':')) return ip;
  const mapped = IPV4_MAPPED.exec(ip);
  if (mapped) return mapped[1]!;
  const address = ip.split('%')[0]!;
  if (!isIPv6(address)) return ip;
  const [head = '', tail] = address.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  // An embedded IPv4 address at the end stands for two groups.
  const width = (part: string[]) => part.reduce((sum, group) => sum + (group.includes('.') ? 2 : 1), 0);
  const front = groups(head);
  const back = tail === undefined ? [] : groups(tail);
  const full = [...front, ...Array<string>(8 - width(front) - width(back)).fill('0'), ...back];
  return `${full
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}
