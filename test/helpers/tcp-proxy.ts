import { connect, createServer, type Server, type Socket } from 'node:net';
import { freePort } from '../../src/redis/server.js';

/**
 * A TCP relay on 127.0.0.1 in front of a real server, so a test can cut one process's connections to Redis
 * (and refuse new ones) while everything else keeps its own, then restore them on the same port.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly open = new Set<Socket>();

  private constructor(
    readonly port: number,
    private readonly targetPort: number,
  ) {}

  static async start(targetPort: number): Promise<TcpProxy> {
    const proxy = new TcpProxy(await freePort(), targetPort);
    await proxy.restore();
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Drops every relayed connection and refuses new ones until `restore`. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.open) socket.destroy();
    this.open.clear();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }

  async restore(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, '127.0.0.1');
      for (const [from, to] of [
        [client, upstream],
        [upstream, client],
      ] as const) {
        this.open.add(from);
        from.pipe(to);
        from.on('error', () => to.destroy());
        from.on('close', () => {
          this.open.delete(from);
          to.destroy();
        });
      }
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.server = server;
  }

  stop(): Promise<void> {
    return this.cut();
  }
}
