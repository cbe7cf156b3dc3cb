interface Connection {
  once(event: 'close', listener: () => void): unknown;
}

/**
 * SOCKETS_PER_IP, counted per pod. Per pod on purpose: the load balancers hash the client address for
 * /v1/socket/ (deploy/nginx.conf, k8s/), so one address's sockets all land on one pod and a per-pod count is the
 * address's count. A count shared through Redis would have to be decremented by the pod holding the socket and
 * would leak when a pod dies without doing so, locking addresses out until some expiry.
 *
 * A session holds its slot from the Engine.IO handshake. One that has not connected to a namespace within
 * `pendingMs` gives it back then: socket.io closes such a session at the same moment, but a polling session
 * without a pending poll only finishes closing ~30 s later, and 50 abandoned handshakes would lock every client
 * of the address out until then.
 */
export class SocketCap {
  private readonly open = new Map<string, number>();
  private readonly established = new WeakSet<Connection>();
  private refusing = false;

  constructor(
    private readonly max: number,
    private readonly pendingMs: number,
  ) {}

  /** Whether a new handshake from `ip` is accepted (never once the pod drains). */
  allows(ip: string): boolean {
    return !this.refusing && (this.open.get(ip) ?? 0) < this.max;
  }

  /** Counts an accepted connection until it closes, or until `pendingMs` if it never connects to a namespace. */
  track(ip: string, connection: Connection): void {
    this.open.set(ip, (this.open.get(ip) ?? 0) + 1);
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      const left = (this.open.get(ip) ?? 1) - 1;
      if (left > 0) this.open.set(ip, left);
      else this.open.delete(ip);
    };
    const pending = setTimeout(() => {
      if (!this.established.has(connection)) release();
    }, this.pendingMs);
    pending.unref();
    connection.once('close', () => {
      clearTimeout(pending);
      release();
    });
  }

  /** The connection reached a namespace: it keeps its slot until it closes. */
  establish(connection: Connection): void {
    this.established.add(connection);
  }

  /** Refuses every later handshake: a draining pod sends its clients elsewhere. */
  refuseAll(): void {
    this.refusing = true;
  }
}
