import type { RelaySocket } from './types.js';

/** engine.io's connection, as far as closing it goes (its types keep the transport's `ws` private). */
interface EngineConnection {
  close(discard: boolean): unknown;
  transport: { name: string; socket?: { terminate(): void } };
}

/**
 * Closes a socket's connection without a socket.io disconnect packet, dropping what it has not read: the client
 * sees its transport close and reconnects by itself (after `io server disconnect` it never would), then joins
 * again.
 */
export function closeTransport(socket: RelaySocket): void {
  const conn = socket.conn as unknown as EngineConnection;
  const { transport } = conn;
  conn.close(true);
  // A WebSocket's close handshake would wait behind the frames the client has not read (up to 30 s).
  if (transport.name === 'websocket') transport.socket?.terminate();
}
