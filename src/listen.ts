import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Starts `server` on host:port and resolves to the `http://host:port` a local client reaches it on. */
export async function listen(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  const local = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${local}:${actual}`;
}
