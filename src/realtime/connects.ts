import type { RelaySocket } from './types.js';
import { closeConnection } from './transport.js';

/** An Engine.IO packet as engine.io emits it ('packet'): socket.io's packets are its `message`s. */
interface EnginePacket {
  type: string;
  data?: unknown;
}

/** socket.io's CONNECT: a text message whose first character, the packet type, is 0. */
const isConnect = (packet: EnginePacket) =>
  packet.type === 'message' && typeof packet.data === 'string' && packet.data.startsWith('0');

/**
 * One socket per Engine.IO connection (the relay serves one namespace, `/`). socket.io makes a socket of every
 * CONNECT it decodes before the first one has connected, so the CONNECTs of one polling POST or of one read of
 * WebSocket frames would each become a socket on one connection, which holds one SOCKETS_PER_IP slot. A
 * connection's second CONNECT, whatever became of the first, closes it before socket.io reads that packet (engine.io
 * emits 'packet' before the message): no further socket, and nothing after it in the same POST or read is read.
 */
export function oneConnect(connection: RelaySocket['conn'], refused: () => void): void {
  let connects = 0;
  connection.on('packet', (packet: EnginePacket) => {
    if (!isConnect(packet) || ++connects === 1) return;
    refused();
    closeConnection(connection);
  });
}
