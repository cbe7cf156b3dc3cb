import { Agent } from 'node:http';
import { expect } from 'chai';
import { post, startTestApi, type TestApi } from '../helpers/api.js';
import { requireNginx, startNginx, type TestNginx } from '../helpers/nginx.js';
import { connectClient, joinsHandled, joinsSettled, type TestClient } from '../helpers/sockets.js';
import { waitFor } from '../helpers/wait.js';

const request = { chain: 'btc', wkIdentity: 'lb1', action: 'tx', payload: 'aa', path: '0-0' };

/** A raw Engine.IO session: the handshake, then `follow-ups` requests that name its sid. */
async function pollingSession(base: string, followUps: number): Promise<{ status: number; body: string }[]> {
  const path = `${base}/v1/socket/key/?EIO=4&transport=polling`;
  const handshake = await fetch(path);
  expect(handshake.status).to.equal(200);
  const { sid } = JSON.parse((await handshake.text()).slice(1)) as { sid: string };
  const answers: { status: number; body: string }[] = [];
  for (let i = 0; i < followUps; i++) {
    // The client's socket.io CONNECT first (a connection takes one), then pongs; each POST is answered "ok".
    const res = await fetch(`${path}&sid=${sid}`, { method: 'POST', body: i === 0 ? '40' : '3' });
    answers.push({ status: res.status, body: await res.text() });
  }
  return answers;
}

/**
 * Whether `api` holds the client's Engine.IO session: a polling request naming the sid of an upgraded session
 * answers "Bad request" (code 3) on its pod and "Session ID unknown" (code 1) on any other.
 */
async function holds(api: TestApi, c: TestClient): Promise<boolean> {
  const res = await fetch(`${api.url}/v1/socket/key/?EIO=4&transport=polling&sid=${c.socket.io.engine.id}`);
  const { code } = (await res.json()) as { code: number };
  if (code !== 1 && code !== 3) throw new Error(`unexpected Engine.IO answer ${code}`);
  return code === 3;
}

describe('deploy/nginx.conf', function () {
  before(requireNginx);

  describe('through nginx (deploy/nginx.conf) in front of two pods', () => {
    let a: TestApi;
    let b: TestApi;
    const clients: TestClient[] = [];
    before(async () => {
      a = await startTestApi({ TRUST_PROXY_HOPS: '1' });
      b = await startTestApi({ TRUST_PROXY_HOPS: '1' });
    });
    after(async () => {
      for (const c of clients) c.close();
      await a.stop(); // a no-op when the test already stopped it
      await b.stop();
    });
    const hostPort = (api: TestApi) => new URL(api.url).host;

    it('hashes the client address: clients spread over both pods, upgrade, get every event; a stopped pod’s clients move and get the pending request replayed', async function () {
      this.timeout(60_000);
      const nginx = await startNginx([hostPort(a), hostPort(b)]);
      try {
        const transports = new Map<TestClient, string[]>();
        const onA = new Map<TestClient, boolean>();
        // The hash ring depends on the pods' random ports: clients from 8 addresses at a time until both pods
        // hold some (8 addresses all landing on one pod happens in a few runs in a hundred).
        for (let n = 2; n <= 41 && new Set(onA.values()).size < 2;) {
          const before = await joinsHandled();
          for (const end = n + 8; n < end; n++) {
            // engine.io-client takes an http.Agent in Node (typed for the browser as string | boolean).
            const agent = new Agent({ localAddress: `127.0.0.${n}` }) as unknown as string;
            const c = connectClient(nginx.url, 'key', { wkIdentity: 'lb1' }, { agent });
            const seen: string[] = [];
            transports.set(c, seen);
            c.socket.io.on('open', () => {
              seen.push(c.socket.io.engine.transport.name);
              c.socket.io.engine.once('upgrade', (transport: { name: string }) => seen.push(transport.name));
            });
            clients.push(c);
          }
          await joinsSettled(before, 8);
          await waitFor('every client upgraded', () => [...transports.values()].every((t) => t.length === 2));
          for (const c of clients) onA.set(c, await holds(a, c));
        }
        expect(new Set([...transports.values()].map((t) => t.join('→')))).to.deep.equal(
          new Set(['polling→websocket']),
        );

        const stored = (await post(nginx.url, '/v1/action', request)).body.data;
        for (const c of clients) await waitFor('the event', () => c.received.length === 1);
        for (const c of clients) expect(c.received).to.deep.equal([{ event: 'tx', data: stored }]);

        const moved = clients.filter((c) => onA.get(c));
        const stayed = clients.filter((c) => !onA.get(c));
        expect(moved.length, 'clients on pod a').to.be.greaterThan(0);
        expect(stayed.length, 'clients on pod b').to.be.greaterThan(0);

        const rejoined = await joinsHandled();
        await a.stop();
        await joinsSettled(rejoined, moved.length);
        for (const c of moved) {
          // The replay is written before the join is counted, but reaches the client a little later.
          await waitFor('the replay', () => c.received.length === 2);
          expect(c.disconnects).to.deep.equal(['transport close']);
          expect(c.socket.connected).to.equal(true);
          // A new connection: the pending request is replayed to it.
          expect(c.received).to.deep.equal([
            { event: 'tx', data: stored },
            { event: 'tx', data: stored },
          ]);
        }
        for (const c of stayed) {
          expect(c.disconnects).to.deep.equal([]);
          expect(c.received).to.deep.equal([{ event: 'tx', data: stored }]);
        }
      } finally {
        await nginx.stop();
      }
    });
  });

  describe('nginx control: the same config without the hash (round robin)', () => {
    let a: TestApi;
    let b: TestApi;
    let hashed: TestNginx;
    let roundRobin: TestNginx;
    before(async () => {
      a = await startTestApi({ TRUST_PROXY_HOPS: '1' });
      b = await startTestApi({ TRUST_PROXY_HOPS: '1' });
      const pods: [string, string] = [new URL(a.url).host, new URL(b.url).host];
      hashed = await startNginx(pods);
      roundRobin = await startNginx(pods, true);
    });
    after(async () => {
      await hashed.stop();
      await roundRobin.stop();
      await a.stop();
      await b.stop();
    });

    it('breaks polling sessions (Session ID unknown) where the hash keeps them', async () => {
      expect(await pollingSession(hashed.url, 4)).to.deep.equal(Array(4).fill({ status: 200, body: 'ok' }));
      const broken = await pollingSession(roundRobin.url, 4);
      expect(broken).to.deep.include({
        status: 400,
        body: JSON.stringify({ code: 1, message: 'Session ID unknown' }),
      });
    });
  });
});
