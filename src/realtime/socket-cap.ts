interface Connection {
  /** The handshake's request (engine.io keeps the one its server was asked to allow). */
  readonly request: object;
  on(event: 'close', listener: () => void): unknown;
}

interface Slot {
  release(): void;
  /** Gives the slot back unless the handshake reached a namespace by then. */
  pending: NodeJS.Timeout | undefined;
}

/**
 * SOCKETS_PER_IP, counted per pod. Per pod on purpose: the load balancers hash the client address for
 * /v1/socket/ (deploy/nginx.conf, k8s/), so one address's sockets all land on one pod and a per-pod count is the
 * address's count. A count shared through Redis would have to be decremented by the pod holding the socket and
 * would leak when a pod dies without doing so, locking addresses out until some expiry.
 *
 * A handshake takes its slot when it is allowed, before engine.io creates the session (that takes a turn of the
 * event loop or more), so concurrent handshakes of one address never all see the same free slot. One that has not
 * connected to a namespace within `pendingMs` gives it back then: socket.io closes such a session at the same
 * moment, but a polling session without a pending poll only finishes closing ~30 s later, and 50 abandoned
 * handshakes would lock every client of the address out until then. A handshake that fails after it was allowed
 * never becomes a connection and gives its slot back the same way.
 */
export class SocketCap {
  private readonly open = new Map<string, number>();
  private readonly slots = new WeakMap<object, Slot>();
  private refusing = false;

  constructor(
    private readonly max: number,
    private readonly pendingMs: number,
  ) {}

  /** Takes a slot of `ip` for this handshake request, or refuses it (always once the pod drains). */
  admit(ip: string, request: object): boolean {
    const count = this.open.get(ip) ?? 0;
    if (this.refusing || count >= this.max) return false;
    this.open.set(ip, count + 1);
    let held = true;
    const slot: Slot = {
      release: () => {
        if (!held) return;
        held = false;
        clearTimeout(slot.pending);
        const left = (this.open.get(ip) ?? 1) - 1;
        if (left > 0) this.open.set(ip, left);
        else this.open.delete(ip);
      },
      pending: undefined,
    };
    slot.pending = setTimeout(slot.release, this.pendingMs).unref();
    this.slots.set(request, slot);
    return true;
  }

  /** The handshake became a connection: its slot is given back when it closes (engine.io closes it once). */
  track(connection: Connection): void {
    const slot = this.slots.get(connection.request);
    if (slot) connection.on('close', slot.release);
  }

  /** The connection reached a namespace: it keeps its slot until it closes. */
  establish(connection: Connection): void {
    const slot = this.slots.get(connection.request);
    if (!slot) return;
    clearTimeout(slot.pending);
    // The connection's `close` listener keeps the slot: not the timer.
    slot.pending = undefined;
    this.slots.delete(connection.request);
  }

  /** Refuses every later handshake: a draining pod sends its clients elsewhere. */
  refuseAll(): void {
    this.refusing = true;
  }
}
