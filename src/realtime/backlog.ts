import { engineConnection } from '../core/library-patches.js';
import type { Logger } from '../core/log.js';
import { socketMetrics } from './metrics.js';
import { closeTransport } from './transport.js';
import type { RelaySocket, SocketBacklogs } from './types.js';

/** Strings whose UTF-8 length is remembered: the last few events sent, each one string in many sockets' buffers. */
const REMEMBERED_STRINGS = 4;
/** Characters under which a string is counted each time (pings, acknowledgements). */
const SHORT_STRING = 1024;

/**
 * UTF-8 bytes of what engine.io holds, as it will send them. A string's is counted once however many write buffers
 * hold it (an event sent to many sockets is one string): counting takes a pass over it.
 */
class WireBytes {
  private readonly recent: { text: string; bytes: number }[] = [];

  of(data: unknown): number {
    if (data instanceof Uint8Array) return data.byteLength;
    if (typeof data !== 'string') return 0;
    if (data.length < SHORT_STRING) return Buffer.byteLength(data);
    // The same string object compares at once; another one of equal length stops at its first difference.
    const known = this.recent.find((entry) => entry.text === data);
    if (known) return known.bytes;
    const bytes = Buffer.byteLength(data);
    if (this.recent.unshift({ text: data, bytes }) > REMEMBERED_STRINGS) this.recent.pop();
    return bytes;
  }
}

/**
 * What the pod holds for sockets that do not read (docs/api.md#socket-limits): bytes of events handed to a
 * connection that the kernel has not taken yet — engine.io's write buffer and the WebSocket's unsent frames —
 * per socket and over the pod. An event that would take a socket past `perSocket` disconnects it instead; one
 * that would take the pod past `perPod` first disconnects the sockets holding the most. A disconnected socket
 * sees its transport close, reconnects, and the key path's replay gives it the pending request.
 *
 * A socket's count is taken again after each send and whenever its transport has written everything it was
 * given (`ready`), so the pod's sum follows the sockets without scanning them. An event sent to several sockets
 * at once is one string and one frame in memory, counted for each of them: the counts bound memory from above.
 */
export class Backlogs implements SocketBacklogs {
  private readonly held = new Map<RelaySocket, number>();
  private readonly wireBytes = new WireBytes();
  private podBytes = 0;

  constructor(
    private readonly perSocket: number,
    private readonly perPod: number,
    private readonly log: Logger,
  ) {}

  /** Counts a new socket's backlog; `forget` it once it disconnected. */
  watch(socket: RelaySocket): void {
    const conn = engineConnection(socket.conn);
    const written = () => this.sent(socket);
    conn.transport.on('ready', written);
    // A WebSocket is the last transport: only a polling session upgrades.
    if (conn.transport.name !== 'websocket')
      conn.on('upgrade', (transport) => transport.on('ready', written));
  }

  /**
   * Whether `bytes` more of event may be sent to the socket. When not, it is disconnected; so may be the sockets
   * holding the most, to make room in the pod's bound. Call `sent` once the event went out.
   */
  admit(socket: RelaySocket, bytes: number): boolean {
    if (!socket.connected) return false;
    if (this.measure(socket) + bytes > this.perSocket) {
      this.drop(socket, 'socket');
      return false;
    }
    if (this.podBytes + bytes > this.perPod) this.shed(bytes);
    return socket.connected;
  }

  /** The event went out to the socket: what it holds now. */
  sent(socket: RelaySocket): void {
    if (socket.connected) this.measure(socket);
  }

  /** Disconnects the sockets holding the most until `bytes` more fit in the pod's bound. */
  private shed(bytes: number): void {
    const largestFirst = [...this.held].sort((a, b) => b[1] - a[1]);
    for (const [socket] of largestFirst) {
      if (this.podBytes + bytes <= this.perPod) return;
      this.drop(socket, 'pod');
    }
  }

  private measure(socket: RelaySocket): number {
    const conn = engineConnection(socket.conn);
    let bytes = conn.transport.name === 'websocket' ? (conn.transport.socket?.bufferedAmount ?? 0) : 0;
    for (const packet of conn.writeBuffer) bytes += this.wireBytes.of(packet.data);
    this.podBytes += bytes - (this.held.get(socket) ?? 0);
    if (bytes > 0) this.held.set(socket, bytes);
    else this.held.delete(socket);
    return bytes;
  }

  /** The socket disconnected: it holds nothing any more. */
  forget(socket: RelaySocket): void {
    this.podBytes -= this.held.get(socket) ?? 0;
    this.held.delete(socket);
  }

  private drop(socket: RelaySocket, bound: 'socket' | 'pod'): void {
    const heldBytes = this.held.get(socket) ?? 0;
    this.forget(socket);
    socketMetrics.slowReader(socket.data.side);
    this.log.warn('socket disconnected: not reading', { path: socket.data.side, bound, heldBytes });
    closeTransport(socket);
  }
}
