/**
 * A child process of the socket phases holding socket.io clients (socket.io-client, WebSocket transport), so the
 * pod's CPU is measured apart from its clients' and no process opens more files than the machine allows. Driven
 * over IPC by bench/socket-clients.ts: `connect` opens and joins `count` sockets, each to its own pair, at most
 * `inFlight` waiting for their join's acknowledgement at a time, and answers once all are joined; `close` closes
 * them all.
 */
import { io, type Socket } from 'socket.io-client';
import type { ClientCommand, ClientReply } from './socket-clients.js';

const sockets: Socket[] = [];

const reply = (message: ClientReply) => process.send!(message);

function connectAll(command: Extract<ClientCommand, { type: 'connect' }>): void {
  const started = performance.now();
  const target99 = Math.ceil(command.count * 0.99);
  let next = 0;
  let joined = 0;
  let refused = 0;
  let ms99 = 0;
  const open = () => {
    if (next >= command.count) return;
    const wkIdentity = `${command.prefix}-${next++}`;
    const socket = io(command.url, {
      path: `/v1/socket/${command.side}`,
      transports: ['websocket'],
      reconnectionAttempts: 100,
      timeout: 10_000,
    });
    let answered = false;
    // A socket that reconnects joins again; its first answer is the one counted.
    socket.on('connect', () =>
      socket.emit('join', { wkIdentity }, (answer: { ok: boolean }) => {
        if (answered) return;
        answered = true;
        if (!answer.ok) refused++;
        joined++;
        if (joined === target99) ms99 = performance.now() - started;
        if (joined < command.count) return open();
        reply({ type: 'joined', count: joined, refused, ms99, msAll: performance.now() - started });
      }),
    );
    sockets.push(socket);
  };
  for (let i = 0; i < Math.min(command.inFlight, command.count); i++) open();
}

process.on('message', (command: ClientCommand) => {
  if (command.type === 'connect') return connectAll(command);
  for (const socket of sockets.splice(0)) socket.close();
  reply({ type: 'closed' });
});
