import { request as httpRequest } from 'node:http';
import { expect } from 'chai';
import { WebSocket } from 'ws';
import { loadConfig } from '../../src/config.js';
import { registry } from '../../src/core/metrics.js';
import { freePort } from '../../src/core/redis/server.js';
import { post, startTestApi, type TestApi } from '../helpers/api.js';
import { alive, startApiPod, type ApiPod } from '../helpers/child.js';
import { parsePrometheus, valueOf } from '../helpers/prometheus.js';
import { redis } from '../helpers/redis.js';
import { signed, pairOf } from '../helpers/signing.js';
import { closedAfterEach, connected, dataOf, joinsHandled, joinsSettled } from '../helpers/sockets.js';
import { waitFor } from '../helpers/wait.js';

const tx = (wkIdentity: string, payload = 'aa') => ({
  chain: 'btc',
  wkIdentity,
  action: 'tx',
  payload,
  path: '0-0',
});

const client = closedAfterEach();

/** A pod's metric, scraped from its own listener. */
async function podMetric(metricsUrl: string, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  return valueOf(parsePrometheus(text), name, labels);
}

const engineUrl = (base: string) => `${base.replace(/^http/, 'ws')}/v1/socket/key/?EIO=4&transport=websocket`;

/**
 * A client that speaks Engine.IO and socket.io by hand over a WebSocket from `localAddress`, joins `room` on the key
 * path, and is then paused: it never reads again.
 */
async function slowReader(base: string, localAddress: string, room: string): Promise<WebSocket> {
  const ws = new WebSocket(engineUrl(base), { localAddress });
  ws.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    ws.once('unexpected-response', (_req, res) => reject(new Error(`handshake refused: ${res.statusCode}`)));
    ws.on('message', (data) => {
      const text = data.toString();
      if (text.startsWith('0')) ws.send('40');
      else if (text.startsWith('40')) {
        ws.send(`42${JSON.stringify(['join', { wkIdentity: room }])}`);
        resolve();
      }
    });
  });
  return ws;
}

describe('slow readers (docs/api.md#socket-limits)', () => {
  it('200 sockets that never read, from 4 addresses, and 1 MB records: a pod with a capped heap survives, drops them, and a reader gets every record', async function () {
    this.timeout(120_000);
    const metricsPort = await freePort();
    const metricsUrl = `http://127.0.0.1:${metricsPort}`;
    const pod = await startApiPod(
      { METRICS_PORT: String(metricsPort), WRITE_BUDGET_BYTES: String(64 * 1024 * 1024), LOG_LEVEL: 'info' },
      // Less heap than a 512 MiB pod gives Node: before the bound, the 6th record ran it out of memory.
      ['--max-old-space-size=256'],
    );
    const slow: WebSocket[] = [];
    try {
      const room = 'slow-readers';
      const reader = client(pod.url, 'key', { wkIdentity: room });
      const addresses = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'];
      for (let i = 0; i < 200; i += 20) {
        slow.push(
          ...(await Promise.all(
            Array.from({ length: 20 }, (_, j) => slowReader(pod.url, addresses[(i + j) % 4]!, room)),
          )),
        );
      }
      const joined = { path: 'key', outcome: 'joined' };
      await waitFor(
        '201 joins',
        async () => (await podMetric(metricsUrl, 'relay_socket_joins_total', joined)) === 201,
      );
      for (const ws of slow) ws.pause();
      await connected(reader);

      // 1 MB records until every slow socket held more than its budget (what the kernel's buffers take of each
      // connection differs), and then some.
      const key = { path: 'key' };
      const records: unknown[] = [];
      let extra = 3;
      for (let i = 0; i < 60 && extra > 0; i++) {
        const res = await post(pod.url, '/v1/action', tx(room, (i % 16).toString(16).repeat(1_000_000)));
        expect(res.status).to.equal(200);
        records.push(res.body.data);
        if ((await podMetric(metricsUrl, 'relay_sockets_connected', key)) === 1) extra--;
      }
      expect(extra).to.equal(0);
      await waitFor(
        'every record at the reader',
        () => dataOf(reader, 'tx').length === records.length,
        60_000,
      );
      expect(dataOf(reader, 'tx')).to.deep.equal(records);
      expect(reader.disconnects).to.deep.equal([]);
      expect(await podMetric(metricsUrl, 'relay_socket_slow_readers_total', key)).to.equal(200);
      expect(alive(pod.child.process.pid!)).to.equal(true);
      expect((await fetch(`${pod.url}/healthz`)).status).to.equal(200);
      // The slow clients see their connection closed once they read again.
      const closed = slow.map((ws) => new Promise((resolve) => ws.once('close', resolve)));
      for (const ws of slow) ws.resume();
      await Promise.all(closed);
    } finally {
      for (const ws of slow) ws.terminate();
      await pod.stop();
    }
    expect(pod.child.stderr).not.to.include('heap out of memory');
  });
});

describe('SOCKET_BACKLOG_BYTES and SOCKET_BACKLOG_POD_BYTES', () => {
  it('default to 4 MiB and 128 MiB; a socket must hold the largest record, the pod at least one socket', () => {
    expect(loadConfig({}).realtime.backlog).to.deep.equal({
      perSocket: 4 * 1024 ** 2,
      perPod: 128 * 1024 ** 2,
    });
    expect(() => loadConfig({ SOCKET_BACKLOG_BYTES: '1048576' })).to.throw(
      'SOCKET_BACKLOG_BYTES must be an integer from 3145728 to 1073741824 (got "1048576")',
    );
    expect(() =>
      loadConfig({ SOCKET_BACKLOG_BYTES: '8388608', SOCKET_BACKLOG_POD_BYTES: '4194304' }),
    ).to.throw('SOCKET_BACKLOG_POD_BYTES must be an integer from 8388608 to 68719476736 (got "4194304")');
  });
});

/**
 * A socket.io session over HTTP long-polling made by hand, joined with `join` on `side`'s path and then never
 * polled: everything sent to it stays in the pod's write buffer. Answers the session's polling URL.
 */
async function pollingJoin(api: TestApi, side: 'key' | 'wallet', join: object): Promise<string> {
  const engine = `${api.url}/v1/socket/${side}/?EIO=4&transport=polling`;
  const session = `${engine}&sid=${JSON.parse((await (await fetch(engine)).text()).slice(1)).sid as string}`;
  const send = async (body: string) => {
    const res = await fetch(session, { method: 'POST', body });
    expect(await res.text()).to.equal('ok');
  };
  const joins = await joinsHandled();
  await send('40');
  await send(`42${JSON.stringify(['join', join])}`);
  await joinsSettled(joins, 1);
  return session;
}

describe('backlog bounds count bytes as sent', () => {
  it('a polling socket that never polls, sent records of `€` (3 bytes each): disconnected once it holds 3 MiB of bytes', async function () {
    this.timeout(30_000);
    const api = await startTestApi({
      SOCKET_BACKLOG_BYTES: String(3 * 1024 * 1024),
      WRITE_BUDGET_BYTES: String(64 * 1024 * 1024),
    });
    try {
      const room = 'euro-backlog';
      const session = await pollingJoin(api, 'key', { wkIdentity: room });
      const metric = async (name: string) => {
        const text = await registry.metrics();
        return valueOf(parsePrometheus(text), name, { path: 'key' });
      };
      const dropped = await metric('relay_socket_slow_readers_total');
      // 600,000 characters, 1.8 MB of UTF-8 each (the record's JSON, and so the event, as sent).
      const record = {
        chain: 'btc',
        wkIdentity: room,
        action: 'publicnoncesrequest',
        payload: '€'.repeat(600_000),
      };
      expect((await post(api.url, '/v1/action', record)).status).to.equal(200);
      expect(await metric('relay_socket_slow_readers_total')).to.equal(dropped);
      // 3.6 MB held: past the bound (by characters it would be 1.2 M of 3 M: five records, 9 MB, would fit).
      expect((await post(api.url, '/v1/action', record)).status).to.equal(200);
      await waitFor(
        'the socket dropped',
        async () => (await metric('relay_socket_slow_readers_total')) === dropped + 1,
      );
      expect((await fetch(session)).status).to.equal(400);
    } finally {
      await api.stop();
    }
  });
});

describe('the events of the stream count against the same backlog bound as records', () => {
  const BOUND = 3 * 1024 * 1024;
  let api: TestApi;
  before(async () => {
    api = await startTestApi({
      AUTH_ROUTES: 'ack=off',
      SOCKET_BACKLOG_BYTES: String(BOUND),
      WRITE_BUDGET_BYTES: String(64 * 1024 * 1024),
    });
  });
  after(() => api.stop());

  const slowReaders = async () =>
    valueOf(parsePrometheus(await registry.metrics()), 'relay_socket_slow_readers_total', { path: 'wallet' });
  /** What a record's event takes in a write buffer: its packet, as socket.io encodes it. */
  const packetBytes = (record: object & { action: string }) =>
    Buffer.byteLength(`42${JSON.stringify([record.action, record])}`);
  const reply = (room: string, payload: string) => ({
    chain: 'btc',
    wkIdentity: room,
    action: 'txid',
    payload,
  });

  for (const [event, trigger] of [
    [
      'delivered',
      async (room: string) => {
        const request = await post(api.url, '/v1/action', tx(room));
        expect((await post(api.url, `/v1/action/${room}/${request.body.data.id}/ack`, {})).status).to.equal(
          200,
        );
      },
    ],
    ['presence', async (room: string) => void client(api.url, 'key', { wkIdentity: room })],
  ] as const) {
    it(`a wallet stream socket that never polls, held records to just under its bound: the ${event} event drops it`, async function () {
      this.timeout(30_000);
      const room = `${event}-backlog`;
      const session = await pollingJoin(api, 'wallet', { wkIdentity: room, since: { offset: 0 } });
      // Takes the connect packet: the socket holds nothing from now on, and never polls again.
      expect((await fetch(session)).status).to.equal(200);
      const dropped = await slowReaders();
      // Two replies held, 64 bytes short of the bound: less than any event of the stream takes.
      const first = await post(api.url, '/v1/action', reply(room, '€'.repeat(500_000)));
      expect(first.status).to.equal(200);
      const held = packetBytes(first.body.data);
      const overhead = held - Buffer.byteLength(first.body.data.payload);
      const rest = BOUND - 64 - held - overhead;
      const filler = '€'.repeat(Math.floor(rest / 3)) + 'a'.repeat(rest % 3);
      const second = await post(api.url, '/v1/action', reply(room, filler));
      expect(second.status).to.equal(200);
      expect(held + packetBytes(second.body.data)).to.equal(BOUND - 64);
      expect(await slowReaders()).to.equal(dropped);
      const emitted = valueOf(parsePrometheus(await registry.metrics()), 'relay_receipts_emitted_total');
      await trigger(room);
      await waitFor('the socket dropped', async () => (await slowReaders()) === dropped + 1);
      expect((await fetch(session)).status).to.equal(400);
      expect(valueOf(parsePrometheus(await registry.metrics()), 'relay_receipts_emitted_total')).to.equal(
        emitted,
      );
    });
  }
});

describe('Redis stalls during a join', () => {
  /** Pauses every client of the test Redis for `ms` (it resumes by itself). */
  const pauseRedis = (ms: number) => redis().call('CLIENT', 'PAUSE', String(ms), 'ALL');

  /** An app that connects while Redis is paused, sending a fresh join (a fresh signature) on every connect. */
  async function joinThroughStall(api: TestApi, join: () => unknown, wkIdentity: string): Promise<void> {
    const before = await joinsHandled();
    const unavailable = await joinsHandled('unavailable');
    await pauseRedis(5000);
    const app = client(api.url, 'key', undefined);
    app.socket.on('connect', () => app.socket.emit('join', join()));
    await waitFor(
      'a join answered unavailable',
      async () => (await joinsHandled('unavailable')) > unavailable,
    );
    await joinsSettled(before, 1);
    expect(app.disconnects.length).to.be.at.least(1);
    expect(app.disconnects.every((reason) => reason === 'transport close')).to.equal(true);
    const record = (await post(api.url, '/v1/action', tx(wkIdentity))).body.data;
    await waitFor('the event', () => dataOf(app, 'tx').length === 1);
    expect(dataOf(app, 'tx')).to.deep.equal([record]);
    expect(app.socket.connected).to.equal(true);
  }

  it('a signed join: only the transport is closed, counted unavailable; the client reconnects and joins once Redis is back', async function () {
    this.timeout(30_000);
    const api = await startTestApi();
    try {
      const pair = pairOf(Buffer.alloc(32, 0x71), Buffer.alloc(32, 0x72));
      await joinThroughStall(
        api,
        () => signed({ wkIdentity: pair.wkIdentity }, { purpose: 'join', by: 'key', pair }),
        pair.wkIdentity,
      );
    } finally {
      await api.stop();
    }
  });

  it('AUTH_PIN_JOINS=true: an unsigned join whose pin cannot be read is treated the same', async function () {
    this.timeout(30_000);
    const api = await startTestApi({ AUTH_PIN_DAYS: '30', AUTH_PIN_JOINS: 'true' });
    try {
      const wkIdentity = pairOf(Buffer.alloc(32, 0x73), Buffer.alloc(32, 0x74)).wkIdentity;
      await joinThroughStall(api, () => ({ wkIdentity }), wkIdentity);
    } finally {
      await api.stop();
    }
  });
});

describe('SIGTERM while POSTs continue', () => {
  /** A POST whose body arrives in two parts: the second when `finish` is called. */
  function slowUpload(base: string, body: string) {
    let finish!: () => void;
    const answer = new Promise<{ status: number; text: string }>((resolve) => {
      const req = httpRequest(
        `${base}/v1/action`,
        { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': body.length } },
        (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
        },
      );
      req.on('error', () => resolve({ status: 0, text: '' }));
      req.write(body.slice(0, 10));
      finish = () => req.end(body.slice(10));
    });
    return { answer, finish: () => finish() };
  }

  it('every record pod A acknowledged during its drain reaches the key socket on pod B', async function () {
    this.timeout(60_000);
    const room = 'drain-room';
    const b = await startTestApi();
    let a: ApiPod | undefined;
    try {
      a = await startApiPod({ SHUTDOWN_TIMEOUT_MS: '10000' });
      const before = await joinsHandled();
      const key = client(b.url, 'key', { wkIdentity: room });
      await joinsSettled(before, 1);

      const uploads = Array.from({ length: 5 }, (_, i) =>
        slowUpload(a!.url, JSON.stringify(tx(room, `beef${i}${i}`))),
      );
      const answered: unknown[] = [];
      let posting = true;
      const poster = (async () => {
        for (let i = 0; posting; i++) {
          const res = await fetch(`${a!.url}/v1/action`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(tx(room, `c0de${i.toString(16).padStart(4, '0')}`)),
          }).catch(() => undefined);
          if (res?.status === 200) answered.push(((await res.json()) as { data: unknown }).data);
          else if (res) await res.arrayBuffer();
          else posting = false;
        }
      })();
      await waitFor('posts acknowledged', () => answered.length >= 10);
      a.child.process.kill('SIGTERM');
      // Readiness 503, or the listener already closed: pod A has no sockets to close first.
      await waitFor('pod A draining', async () => {
        const ready = await fetch(`${a!.url}/readyz`).then(
          (res) => res.status,
          () => 'refused',
        );
        return ready === 503 || ready === 'refused';
      });
      for (const upload of uploads) upload.finish();
      for (const upload of uploads) {
        const { status, text } = await upload.answer;
        expect(status).to.equal(200);
        answered.push(JSON.parse(text).data);
      }
      expect(await a.child.exit()).to.equal(0);
      posting = false;
      await poster;
      const ids = (records: unknown[]) => records.map((r) => (r as { id: string }).id).sort();
      await waitFor('every acknowledged record on pod B', () =>
        ids(answered).every((id) => ids(dataOf(key, 'tx')).includes(id)),
      ).catch(() => undefined);
      expect(ids(dataOf(key, 'tx'))).to.deep.equal(ids(answered));
    } finally {
      a?.child.kill();
      await b.stop();
    }
  });
  it('uploads answered as pod A closes, each connection closed in the turn of its answer: every record reaches pod B', async function () {
    this.timeout(30_000);
    const room = 'drain-close-room';
    const [a, b] = await Promise.all([startTestApi(), startTestApi()]);
    try {
      // The earliest a connection can close after its answer (a client or balancer closing at once): the last
      // one to close ends the server's close, and the adapter's, in that same turn.
      let arrived = 0;
      a.handle.server.on('request', (req, res) => {
        arrived++;
        res.once('finish', () => req.socket.destroy());
      });
      const before = await joinsHandled();
      const key = client(b.url, 'key', { wkIdentity: room });
      await joinsSettled(before, 1);
      const uploads = Array.from({ length: 5 }, (_, i) =>
        slowUpload(a.url, JSON.stringify(tx(room, `feed${i}${i}`))),
      );
      await waitFor('every upload in progress', () => arrived === uploads.length);
      const stopped = a.stop();
      await waitFor('pod A closing its HTTP server', () =>
        a.logs.some((line) => line.msg === 'sockets closed'),
      );
      const answered: unknown[] = [];
      for (const upload of uploads) {
        upload.finish();
        const { status, text } = await upload.answer;
        expect(status).to.equal(200);
        answered.push(JSON.parse(text).data);
      }
      await stopped;
      expect(a.logs.filter((line) => line.msg === 'socket notice not published')).to.deep.equal([]);
      await waitFor('every acknowledged record on pod B', () => dataOf(key, 'tx').length === answered.length);
      expect(dataOf(key, 'tx')).to.deep.equal(answered);
    } finally {
      await b.stop();
    }
  });
});

describe('SOCKETS_PER_IP under concurrent handshakes', () => {
  it('60 handshakes at once from one address (WebSocket and polling): exactly 50 admitted', async function () {
    this.timeout(30_000);
    const api = await startTestApi();
    const opened: WebSocket[] = [];
    try {
      const websocket = () =>
        new Promise<number>((resolve) => {
          const ws = new WebSocket(engineUrl(api.url));
          ws.on('error', () => {});
          ws.once('open', () => {
            opened.push(ws);
            resolve(101);
          });
          ws.once('unexpected-response', (_req, res) => {
            res.resume();
            resolve(res.statusCode!);
          });
        });
      const polling = async () =>
        (await fetch(`${api.url}/v1/socket/key/?EIO=4&transport=polling`).then(async (res) => {
          await res.arrayBuffer();
          return res.status;
        })) === 200
          ? 101
          : 403;
      // Redis holds the handshake budget's commands for a moment: its answers then arrive together, and the
      // handshakes go on side by side, as under a burst.
      await redis().call('CLIENT', 'PAUSE', '300', 'ALL');
      const statuses = await Promise.all(
        Array.from({ length: 60 }, (_, i) => (i % 2 ? websocket() : polling())),
      );
      expect(statuses.filter((status) => status === 101)).to.have.length(50);
      // engine.io refuses a polling handshake with 403 and a WebSocket upgrade with 400.
      const refused = statuses.filter((status, i) => status === (i % 2 ? 400 : 403));
      expect(refused).to.have.length(10);
    } finally {
      for (const ws of opened) ws.terminate();
      await api.stop();
    }
  });
});
