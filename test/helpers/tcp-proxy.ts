import { connect, createServer, type Server, type Socket } from 'node:net';
import { freePort } from '../../src/core/redis/server.js';

/** One relayed connection, with the first bytes its client sent (ioredis names itself there: CLIENT SETNAME). */
interface Link {
  client: Socket;
  upstream: Socket;
  opening: string;
}

/** Enough of a connection's start to hold its CLIENT SETNAME and first commands. */
const OPENING_BYTES = 1024;

/**
 * A TCP relay on 127.0.0.1 in front of a real server, so a test can cut one process's connections to Redis
 * (and refuse new ones) while everything else keeps its own, then restore them on the same port; or freeze some
 * of them: a path that stops forwarding without closing, as a lost NAT or load-balancer flow does.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly links = new Set<Link>();

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
    for (const { client, upstream } of this.links) {
      client.destroy();
      upstream.destroy();
    }
    this.links.clear();
    const server = this.server;
    this.refuse();
    await new Promise<void>((resolve) => (server ? server.once('close', resolve) : resolve()));
  }

  /** Refuses new connections until `restore`; the open ones go on. */
  refuse(): void {
    // The listener closes at once; close's callback would wait for the open connections too.
    this.server?.close();
    this.server = undefined;
  }

  /**
   * Stops forwarding, both ways, on every open connection whose first bytes contain `marker` (e.g. the client's
   * name), without closing it: each side's kernel still acknowledges what the other sends, nothing passes. Such a
   * connection stays open until its client closes it or `cut`/`stop`. Returns how many were frozen.
   */
  freeze(marker: string): number {
    let frozen = 0;
    for (const link of this.links) {
      if (!link.opening.includes(marker)) continue;
      for (const socket of [link.client, link.upstream]) {
        socket.unpipe();
        socket.pause();
      }
      frozen++;
    }
    return frozen;
  }

  /** Takes new connections again (a no-op while it does). */
  async restore(): Promise<void> {
    if (this.server) return;
    const server = createServer((client) => {
      const link: Link = { client, upstream: connect(this.targetPort, '127.0.0.1'), opening: '' };
      this.links.add(link);
      const listen = (chunk: Buffer) => {
        link.opening += chunk.toString('latin1');
        if (link.opening.length >= OPENING_BYTES) client.off('data', listen);
      };
      client.on('data', listen);
      for (const [from, to] of [
        [client, link.upstream],
        [link.upstream, client],
      ] as const) {
        from.pipe(to);
        from.on('error', () => to.destroy());
        from.on('close', () => {
          this.links.delete(link);
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
