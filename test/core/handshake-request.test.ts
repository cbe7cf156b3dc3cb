import { once } from 'node:events';
import { createServer, IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Server, type Socket } from 'socket.io';
import { Manager } from 'socket.io-client';
import {
  coalesceHandshakeWrites,
  releaseHandshakeRequest,
  releaseUpgradeResponses,
} from '../../src/core/library-patches.js';

describe('library patches: a connected socket without its handshake request', () => {
  for (const transports of [['websocket'], ['polling', 'websocket']]) {
    it(`${transports.join(' then ')}: socket.request is replaced, and a second namespace gets the same handshake`, async () => {
      const http = createServer();
      const io = new Server(http, { cors: { origin: '*' } });
      coalesceHandshakeWrites(io);
      releaseUpgradeResponses(io);
      const sockets: Socket[] = [];
      const wasRequest: boolean[] = [];
      for (const name of ['/', '/second']) {
        io.of(name).on('connection', (socket) => {
          wasRequest.push(socket.request instanceof IncomingMessage);
          releaseHandshakeRequest(socket);
          sockets.push(socket);
        });
      }
      http.listen(0, '127.0.0.1');
      await once(http, 'listening');
      const manager = new Manager(`http://127.0.0.1:${(http.address() as AddressInfo).port}`, {
        transports,
        extraHeaders: { 'x-app': 'key' },
        reconnection: false,
      });
      try {
        const first = manager.socket('/');
        const second = manager.socket('/second');
        await Promise.all(
          [first, second].map(
            (socket) => new Promise((resolve) => socket.once('connect', () => resolve(socket))),
          ),
        );
        const [a, b] = sockets as [Socket, Socket];
        // The first namespace built its handshake from the IncomingMessage; the second from what replaced it.
        expect(wasRequest).to.deep.equal([true, false]);
        expect(a.conn).to.equal(b.conn);
        for (const socket of [a, b]) {
          expect(socket.request.headers['x-app']).to.equal('key');
          expect(socket.request.socket.remoteAddress).to.equal('127.0.0.1');
          expect(socket.handshake.headers['x-app']).to.equal('key');
          expect(socket.handshake.address).to.equal('127.0.0.1');
          expect(socket.handshake.secure).to.equal(false);
          expect(socket.handshake.query.EIO).to.equal('4');
        }
        expect(b.handshake.url).to.equal(a.handshake.url);
        // Both namespaces answer on the connection.
        const echoed = new Promise((resolve) => second.once('pong', resolve));
        b.emit('pong', 'yes');
        expect(await echoed).to.equal('yes');
      } finally {
        manager.engine.close();
        await io.close();
      }
    });
  }
});
