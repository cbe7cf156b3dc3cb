/**
 * SOCKETS_PER_IP, counted per pod. Per pod on purpose: the load balancers hash the client address for
 * /v1/socket/ (deploy/nginx.conf, k8s/), so one address's sockets all land on one pod and a per-pod count is the
 * address's count. A count shared through Redis would have to be decremented by the pod holding the socket and
 * would leak when a pod dies without doing so, locking addresses out until some expiry.
 */
export class SocketCap {
  private readonly open = new Map<string, number>();
  private refusing = false;

  constructor(private readonly max: number) {}

  /** Whether a new handshake from `ip` is accepted (never once the pod drains). */
  allows(ip: string): boolean {
    return !this.refusing && (this.open.get(ip) ?? 0) < this.max;
  }

  /** Counts an accepted connection until it closes. */
  track(ip: string, connection: { once(event: 'close', listener: () => void): unknown }): void {
    this.open.set(ip, (this.open.get(ip) ?? 0) + 1);
    connection.once('close', () => {
      const left = (this.open.get(ip) ?? 1) - 1;
      if (left > 0) this.open.set(ip, left);
      else this.open.delete(ip);
    });
  }

  /** Refuses every later handshake: a draining pod sends its clients elsewhere. */
  refuseAll(): void {
    this.refusing = true;
  }
}
