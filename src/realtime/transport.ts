import { engineConnection } from '../core/library-patches.js';
import type { RelaySocket } from './types.js';

/**
 * Closes a socket's connection without a socket.io disconnect packet, dropping what it has not read: the client
 * sees its transport close and reconnects by itself (after `io server disconnect` it never would), then joins
 * again.
 */
export function closeTransport(socket: RelaySocket): void {
  closeConnection(socket.conn);
}

/**
 * Closes an Engine.IO connection at once, dropping what it has not read or sent: engine.io reads nothing more of
 * it, not even the rest of the polling POST or the WebSocket frames being read.
 */
export function closeConnection(connection: RelaySocket['conn']): void {
  const conn = engineConnection(connection);
  const { transport } = conn;
  conn.close(true);
  // A WebSocket's close handshake would wait behind the frames the client has not read (up to 30 s).
  if (transport.name === 'websocket') transport.socket?.terminate();
}
