import { expect } from 'chai';
import { WebSocket } from 'ws';
import { registry } from '../../src/core/metrics.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { rawExchange } from '../helpers/raw-http.js';
import { redis } from '../helpers/redis.js';
import { connected, connectClient, joinsHandled, joinsSettled } from '../helpers/sockets.js';
import { waitFor } from '../helpers/wait.js';

const HANDSHAKE = '/v1/socket/key/?EIO=4&transport=polling';

interface Polled {
  status: number;
  headers: Headers;
  text: string;
}

async function poll(api: TestApi, path: string, init: RequestInit = {}): Promise<Polled> {
  const res = await fetch(api.url + path, init);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Opens an Engine.IO session by polling and never follows it up (no namespace connect, no further poll). */
async function abandonedHandshake(api: TestApi): Promise<string> {
  const res = await poll(api, HANDSHAKE);
  expect(res.status).to.equal(200);
  return (JSON.parse(res.text.slice(1)) as { sid: string }).sid;
}

const websocketHandshake = (requestId: string, query = 'EIO=4&transport=websocket') =>
  `GET /v1/socket/key/?${query} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
  `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nX-Request-Id: ${requestId}\r\n\r\n`;

/** A key-path metric of this process's APIs (the tests' registry is the relay's). */
async function keyMetric(name: string): Promise<number> {
  const metric = await registry.getSingleMetric(name)?.get();
  return metric?.values.find((v) => v.labels.path === 'key')?.value ?? 0;
}

/** socket.io CONNECT packets for the default namespace, as one Engine.IO polling payload. */
const connects = (count: number) => Array.from({ length: count }, () => '40').join('\x1e');

describe('socket handshakes', () => {
  describe('a per-IP budget of new sessions, shared by every pod through Redis', () => {
    let pods: TestApi[];
    before(async () => {
      pods = await Promise.all([0, 1].map(() => startTestApi({ SOCKET_HANDSHAKES_PER_MINUTE: '3' })));
    });
    after(() => Promise.all(pods.map((pod) => pod.stop())));

    it('over it, polling and WebSocket handshakes → 429 in the envelope; an open session keeps polling', async () => {
      const [a, b] = pods as [TestApi, TestApi];
      const sid = await abandonedHandshake(a);
      await abandonedHandshake(b);
      await abandonedHandshake(a);
      expect(await redis().get('relay:rl:handshakes:127.0.0.1')).to.equal('3');

      for (const pod of [a, b]) {
        const refused = await poll(pod, HANDSHAKE, { headers: { 'X-Request-Id': 'hs-over' } });
        expect(refused.status).to.equal(429);
        expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
        expect(refused.headers.get('x-content-type-options')).to.equal('nosniff');
        expect(JSON.parse(refused.text)).to.deep.equal({
          success: false,
          error: {
            code: 'RATE_LIMITED',
            message: 'Too many socket handshakes from this address; retry later.',
            requestId: 'hs-over',
          },
        });
      }
      const ws = await rawExchange(a.url, websocketHandshake('ws-over'));
      expect(ws.status).to.equal(429);
      expect(ws.headers['x-request-id']).to.equal('ws-over');
      expect(ws.body.error.code).to.equal('RATE_LIMITED');

      // The session opened within the budget is not a new handshake: its polls go on.
      const send = await poll(a, `${HANDSHAKE}&sid=${sid}`, { method: 'POST', body: '40' });
      expect(send.status).to.equal(200);
      expect(send.text).to.equal('ok');
      expect(send.headers.get('x-content-type-options')).to.equal('nosniff');
    });
  });

  it('a session that never completes its handshake gives its SOCKETS_PER_IP slot back within SOCKET_CONNECT_TIMEOUT_MS', async () => {
    const api = await startTestApi({ SOCKETS_PER_IP: '2', SOCKET_CONNECT_TIMEOUT_MS: '500' });
    try {
      await abandonedHandshake(api);
      await abandonedHandshake(api);
      // Both slots held: the cap refuses the next one.
      expect((await poll(api, HANDSHAKE)).status).to.equal(403);
      // The abandoned sessions are closed long before their 45 s of ping interval and timeout ran out, and an
      // app of the same address gets in (connected waits 10 s).
      const app = connectClient(api.url, 'key', { wkIdentity: 'after-abandoned' });
      try {
        await connected(app);
      } finally {
        app.close();
      }
    } finally {
      await api.stop();
    }
  });

  it('a handshake for another Engine.IO version: 400 in the envelope, a WebSocket one before any 101', async () => {
    const api = await startTestApi();
    try {
      const refusal = (requestId: string) => ({
        success: false,
        error: {
          code: 'BAD_REQUEST',
          message: 'Unsupported Engine.IO protocol version: the relay speaks EIO=4.',
          requestId,
        },
      });
      for (const version of ['EIO=3', 'EIO=5', 'EIO=4&EIO=3', 'EIO=']) {
        const ws = await rawExchange(api.url, websocketHandshake('eio-ws', `${version}&transport=websocket`));
        expect(ws.status, version).to.equal(400);
        expect(ws.body, version).to.deep.equal(refusal('eio-ws'));
        const polling = await poll(api, `/v1/socket/key/?${version}&transport=polling`, {
          headers: { 'X-Request-Id': 'eio-polling' },
        });
        expect(polling.status, version).to.equal(400);
        expect(JSON.parse(polling.text), version).to.deep.equal(refusal('eio-polling'));
      }
      // Not a handshake of the address's budget.
      expect(await redis().get('relay:rl:handshakes:127.0.0.1')).to.equal(null);
    } finally {
      await api.stop();
    }
  });

  describe('JSONP polling and nosniff, with CORS_ORIGINS set', () => {
    let api: TestApi;
    before(async () => {
      api = await startTestApi({ CORS_ORIGINS: 'https://wallet.example' });
    });
    after(() => api.stop());

    it('a JSONP handshake (j=) → 400 in the envelope instead of a session', async () => {
      for (const query of ['&j=0', '&j=', '&%6A=1']) {
        const res = await poll(api, HANDSHAKE + query, {
          headers: { Origin: 'https://evil.example', 'X-Request-Id': 'jsonp-1' },
        });
        expect(res.status, query).to.equal(400);
        expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
        expect(JSON.parse(res.text)).to.deep.equal({
          success: false,
          error: { code: 'BAD_REQUEST', message: 'JSONP polling is not supported.', requestId: 'jsonp-1' },
        });
      }
    });

    it('socket.io polling answers, and its own refusals, say nosniff', async () => {
      const handshake = await poll(api, HANDSHAKE, { headers: { Origin: 'https://wallet.example' } });
      expect(handshake.status).to.equal(200);
      expect(handshake.headers.get('x-content-type-options')).to.equal('nosniff');
      const unknown = await poll(api, `${HANDSHAKE}&sid=nope`);
      expect(unknown.status).to.equal(400);
      expect(unknown.headers.get('x-content-type-options')).to.equal('nosniff');
    });
  });

  describe('one socket per Engine.IO connection (docs/api.md#socket-limits)', () => {
    let api: TestApi;
    before(async () => {
      api = await startTestApi({ SOCKETS_PER_IP: '1' });
    });
    after(() => api.stop());

    const closedFor = async (refusedBefore: number) => {
      await waitFor(
        'the refusal counted',
        async () => (await keyMetric('relay_socket_connects_refused_total')) > refusedBefore,
      );
      expect(await keyMetric('relay_socket_connects_refused_total')).to.equal(refusedBefore + 1);
    };

    /** The address's single slot is free again and the pod serves: an app of the address connects and joins. */
    const appJoins = async (room: string) => {
      const [joins, sockets] = [await joinsHandled(), await keyMetric('relay_sockets_connected')];
      const app = connectClient(api.url, 'key', { wkIdentity: room });
      try {
        await joinsSettled(joins, 1);
      } finally {
        app.close();
      }
      // Its connection closed: the slot is free for the next test.
      await waitFor('the app gone', async () => (await keyMetric('relay_sockets_connected')) === sockets);
    };

    it('2,000 CONNECTs in one polling POST: no socket, the connection closed, counted once; the slot comes back', async () => {
      const [sockets, refused] = [
        await keyMetric('relay_sockets_connected'),
        await keyMetric('relay_socket_connects_refused_total'),
      ];
      const sid = await abandonedHandshake(api);
      await poll(api, `${HANDSHAKE}&sid=${sid}`, { method: 'POST', body: connects(2000) });
      await closedFor(refused);
      expect(await keyMetric('relay_sockets_connected')).to.equal(sockets);
      const gone = await poll(api, `${HANDSHAKE}&sid=${sid}`);
      expect(gone.status).to.equal(400);
      expect(JSON.parse(gone.text)).to.deep.equal({ code: 1, message: 'Session ID unknown' });
      await appJoins('one-connect-polling');
    });

    it('a CONNECT after the first one connected closes the connection and its socket', async () => {
      const sid = await abandonedHandshake(api);
      const sockets = await keyMetric('relay_sockets_connected');
      const refused = await keyMetric('relay_socket_connects_refused_total');
      await poll(api, `${HANDSHAKE}&sid=${sid}`, { method: 'POST', body: '40' });
      await waitFor(
        'the socket connected',
        async () => (await keyMetric('relay_sockets_connected')) === sockets + 1,
      );
      await poll(api, `${HANDSHAKE}&sid=${sid}`, { method: 'POST', body: '40' });
      await closedFor(refused);
      await waitFor('the socket gone', async () => (await keyMetric('relay_sockets_connected')) === sockets);
      await appJoins('one-connect-second');
    });

    it('2,000 CONNECT frames sent at once over a WebSocket: the connection closed, counted once, no socket left', async () => {
      const [sockets, refused] = [
        await keyMetric('relay_sockets_connected'),
        await keyMetric('relay_socket_connects_refused_total'),
      ];
      const ws = new WebSocket(`${api.url.replace(/^http/, 'ws')}/v1/socket/key/?EIO=4&transport=websocket`);
      ws.on('error', () => {});
      const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
      ws.once('message', () => {
        for (let i = 0; i < 2000; i++) ws.send('40');
      });
      await closed;
      await closedFor(refused);
      await waitFor('no socket left', async () => (await keyMetric('relay_sockets_connected')) === sockets);
      await appJoins('one-connect-websocket');
    });
  });
});
