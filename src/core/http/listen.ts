import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorFields, type Logger } from '../log.js';

const REASONS: Record<string, string> = {
  EADDRINUSE: 'is already in use',
  EACCES: 'needs privileges this process does not have',
  EADDRNOTAVAIL: 'is not an address of this machine',
};

/**
 * Starts `server` on host:port and resolves to the `http://host:port` a local client reaches it on. `variable`
 * is the setting that chose the port, so that a busy port fails with one line naming it. `backlog` is the
 * kernel's accept queue for connections not yet accepted (Node's default is 511). Once listening, the server's
 * errors (an accept failing with EMFILE under a connection flood) are logged, and it goes on serving.
 */
export async function listen(
  server: Server,
  port: number,
  host: string,
  variable: string,
  log: Logger,
  backlog?: number,
): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) => {
      const reason = err.code && REASONS[err.code];
      reject(reason ? new Error(`${variable}=${port}: ${host}:${port} ${reason}`) : err);
    };
    server.once('error', failed);
    server.listen({ port, host, ...(backlog ? { backlog } : {}) }, () => {
      server.off('error', failed);
      server.on('error', (err: NodeJS.ErrnoException) =>
        log.error('server error', { ...errorFields(err), code: err.code, variable }),
      );
      resolve();
    });
  });
  const actual = (server.address() as AddressInfo).port;
  const local = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${local}:${actual}`;
}
