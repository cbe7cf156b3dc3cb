import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

const REASONS: Record<string, string> = {
  EADDRINUSE: 'is already in use',
  EACCES: 'needs privileges this process does not have',
  EADDRNOTAVAIL: 'is not an address of this machine',
};

/**
 * Starts `server` on host:port and resolves to the `http://host:port` a local client reaches it on. `variable`
 * is the setting that chose the port, so that a busy port fails with one line naming it. `backlog` is the
 * kernel's accept queue for connections not yet accepted (Node's default is 511).
 */
export async function listen(
  server: Server,
  port: number,
  host: string,
  variable: string,
  backlog?: number,
): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const reason = err.code && REASONS[err.code];
      reject(reason ? new Error(`${variable}=${port}: ${host}:${port} ${reason}`) : err);
    });
    server.listen({ port, host, ...(backlog ? { backlog } : {}) }, () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  const local = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${local}:${actual}`;
}
