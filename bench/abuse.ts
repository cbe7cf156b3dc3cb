/**
 * Abuse scenarios from one client address, measured against a relay child (not asserted by `npm test`):
 *
 * - **never-reading flood**: `--flood-connections` connections (300) each pipeline 8 `GET /v1/action/{id}` of a
 *   1 MB record and never read; meanwhile a probe client reads a small record every 100 ms. Reports the probe's
 *   p50/p99/max latency, the relay's peak RSS and how many flood connections the relay closed.
 * - **socket handshakes**: 50 polling handshakes never followed up, then how long until a new handshake from
 *   the address is accepted; and how many WebSocket handshakes (101) one address gets through in 10 s.
 * - **refusals**: bodies cheap to send and once expensive to refuse (an action with 10,000 and 20,000 utxos whose
 *   `vout` and `satoshis` are malformed; 2 MiB of nested arrays; 2 MiB of unknown keys; the most unknown keys the
 *   shape limits let through), `--refusals` (3) of each in turn; how long each took to be refused, and the
 *   slowest `/healthz` of a probe on another address meanwhile.
 *
 *   npx tsx bench/abuse.ts [--seconds 30] [--flood-connections 300] [--root <checkout to run the relay from>]
 *
 * `--scenarios flood,handshakes,reconnects,refusals` picks some. `--root` runs another checkout's relay (its
 * `src/main.ts`, through tsx) for before/after figures, e.g. a `git archive` of an older commit with this
 * checkout's node_modules linked in.
 */
import { Agent, get, type AgentOptions } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { freePort, startPrivateRedis } from '../src/core/redis/server.js';
import { memoryOf, ROOT, round, spawnChild, type Child } from './children.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '30' },
    'flood-connections': { type: 'string', default: '300' },
    root: { type: 'string', default: ROOT },
    scenarios: { type: 'string', default: 'flood,handshakes,reconnects,refusals' },
    refusals: { type: 'string', default: '3' },
  },
});
const extraEnv = Object.fromEntries(
  (process.env.ABUSE_RELAY_ENV ?? '')
    .split(',')
    .filter(Boolean)
    .map((kv) => kv.split('=') as [string, string]),
);
const out = (line = '') => process.stdout.write(line + '\n');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const RELAY_ENV = {
  RELAY_ROLE: 'api',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  METRICS_PORT: '0',
  // The scenarios are about what the per-IP request budgets do not catch.
  RATE_LIMIT_POINTS: '1000000',
  WRITE_BUDGET_BYTES: String(1024 ** 4),
};

async function startRelay(redisUrl: string): Promise<Child> {
  const port = await freePort();
  return spawnChild({
    name: 'abuse-relay',
    nodeArgs: ['--import=tsx', join(args.root, 'src/main.ts')],
    env: { ...RELAY_ENV, PORT: String(port), REDIS_URL: redisUrl, ...extraEnv },
    port,
    readyPath: '/readyz',
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
}

async function openRaw(url: string): Promise<Socket> {
  const { port } = new URL(url);
  const socket = connect(Number(port), '127.0.0.1');
  socket.on('error', () => {});
  await new Promise((resolve) => socket.once('connect', resolve));
  return socket;
}

async function flood(relay: Child): Promise<void> {
  const payload = 'ab'.repeat(500_000); // the largest payload an action may carry
  const post = (wkIdentity: string, body: object) =>
    fetch(`${relay.url}/v1/action`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chain: 'btc', wkIdentity, ...body }),
    });
  if ((await post('flood-pair', { action: 'txid', payload })).status !== 200) throw new Error('seed failed');
  if ((await post('probe-pair', { action: 'txid', payload: 'abcd' })).status !== 200)
    throw new Error('seed failed');

  const idle = await memoryOf(relay.process.pid!);
  const count = Number(args['flood-connections']);
  const request = 'GET /v1/action/flood-pair HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(8);
  let closed = 0;
  const sockets: Socket[] = [];
  for (let i = 0; i < count; i++) {
    const socket = await openRaw(relay.url);
    socket.pause(); // never reads: the kernel's buffers fill and the relay's writes back up
    socket.once('close', () => closed++);
    socket.write(request);
    sockets.push(socket);
  }

  const latencies: number[] = [];
  let failures = 0;
  let peakMb = 0;
  const deadline = Date.now() + Number(args.seconds) * 1000;
  const sampler = setInterval(() => {
    void memoryOf(relay.process.pid!).then((m) => (peakMb = Math.max(peakMb, m.rssMb)));
  }, 250);
  // The probe is another client: another loopback address, so another address's budgets.
  const agent = new Agent({ keepAlive: true, localAddress: '127.0.0.2' } as AgentOptions);
  while (Date.now() < deadline) {
    const started = performance.now();
    const status = await new Promise<number>((resolve) => {
      const req = get(`${relay.url}/v1/action/probe-pair`, { agent }, (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
      });
      req.once('error', () => resolve(0));
    });
    if (status === 200) latencies.push(performance.now() - started);
    else failures++;
    await sleep(100);
  }
  agent.destroy();
  clearInterval(sampler);
  latencies.sort((a, b) => a - b);
  out(`flood: ${count} connections × 8 pipelined GETs of a 1 MB record, never read, for ${args.seconds} s`);
  out(
    `  probe p50 ${round(percentile(latencies, 50))} ms, p99 ${round(percentile(latencies, 99))} ms, ` +
      `max ${round(latencies.at(-1) ?? NaN)} ms, ${latencies.length} answered, ${failures} failed`,
  );
  out(
    `  relay RSS ${idle.rssMb} MB before, peak ${peakMb} MB during; flood connections closed by the relay: ` +
      `${closed} of ${count}`,
  );
  for (const socket of sockets) socket.destroy();
}

async function pollingHandshake(relay: Child): Promise<number> {
  const res = await fetch(`${relay.url}/v1/socket/key/?EIO=4&transport=polling`);
  await res.arrayBuffer();
  return res.status;
}

async function handshakes(relay: Child): Promise<void> {
  const opened = await Promise.all(Array.from({ length: 50 }, () => pollingHandshake(relay)));
  const started = Date.now();
  let attempts = 0;
  while ((await pollingHandshake(relay)) !== 200) {
    attempts++;
    if (Date.now() - started > 120_000) break;
    await sleep(100);
  }
  out(
    `50 abandoned polling handshakes (${opened.filter((s) => s === 200).length} accepted): the address was ` +
      `locked out for ${round((Date.now() - started) / 1000)} s (${attempts} refused attempts)`,
  );
}

/** One WebSocket handshake: resolves with the status the relay answered, then closes the connection. */
async function websocketHandshake(relay: Child): Promise<number> {
  const socket = await openRaw(relay.url);
  const status = await new Promise<number>((resolve) => {
    let head = '';
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (head.includes('\r\n')) resolve(Number(head.split(' ')[1]));
    });
    socket.once('close', () => resolve(0));
    socket.write(
      'GET /v1/socket/key/?EIO=4&transport=websocket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n' +
        'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
  });
  socket.destroy();
  return status;
}

async function reconnects(relay: Child): Promise<void> {
  const statuses = new Map<number, number>();
  const deadline = Date.now() + 10_000;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (Date.now() < deadline) {
        const status = await websocketHandshake(relay);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    }),
  );
  const summary = [...statuses].map(([status, n]) => `${n} × ${status}`).join(', ');
  out(
    `WebSocket reconnects from one address in 10 s (20 at a time): ${statuses.get(101) ?? 0} accepted (${summary})`,
  );
}

/** An action whose `count` utxos all have a malformed vout and satoshis. */
function badUtxos(count: number): string {
  const utxos = Array.from({ length: count }, (_, i) => ({ txid: 'ab', vout: `v${i}`, satoshis: 's' }));
  return JSON.stringify({ chain: 'btc', wkIdentity: 'bad-pair', action: 'txid', payload: 'ab', utxos });
}

async function refusals(relay: Child): Promise<void> {
  const depth = 1024 * 1024 - 4;
  const wide = `{${Array.from({ length: 1000 }, (_, i) => `"k${i}":0`).join(',')}}`;
  const bodies: [string, string][] = [
    ['10,000 bad utxos', badUtxos(10_000)],
    ['20,000 bad utxos', badUtxos(20_000)],
    ['2 MiB of nested arrays', `{"a":${'['.repeat(depth)}${']'.repeat(depth)}}`],
    ['2 MiB of unknown keys', `{${Array.from({ length: 150_000 }, (_, i) => `"k${i}":0`).join(',')}}`],
    ['99 objects of 1,000 unknown keys', `{"a":[${Array.from({ length: 99 }, () => wide).join(',')}]}`],
  ];
  const agent = new Agent({ keepAlive: true, localAddress: '127.0.0.2' } as AgentOptions);
  let probing = true;
  let slowestProbe = 0;
  const probe = (async () => {
    while (probing) {
      const started = performance.now();
      await new Promise<void>((resolve) => {
        const req = get(`${relay.url}/healthz`, { agent }, (res) => res.resume().once('end', resolve));
        req.once('error', () => resolve());
      });
      slowestProbe = Math.max(slowestProbe, performance.now() - started);
      await sleep(50);
    }
  })();
  for (const [name, body] of bodies) {
    const times: number[] = [];
    let status = 0;
    for (let i = 0; i < Number(args.refusals); i++) {
      const started = performance.now();
      const res = await fetch(`${relay.url}/v1/action`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      await res.arrayBuffer();
      status = res.status;
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    out(
      `refusal of ${name} (${round(Buffer.byteLength(body) / 1024)} KiB): ${status}, ` +
        `median ${round(percentile(times, 50))} ms, max ${round(times.at(-1)!)} ms over ${times.length}`,
    );
  }
  probing = false;
  await probe;
  agent.destroy();
  out(`  slowest /healthz of a probe on another address meanwhile: ${round(slowestProbe)} ms`);
}

async function main(): Promise<void> {
  const redis = await startPrivateRedis();
  const admin = new Redis(redis.url);
  out(`relay from ${args.root}`);
  try {
    const all = { flood, handshakes, reconnects, refusals };
    for (const name of args.scenarios.split(',') as (keyof typeof all)[]) {
      const scenario = all[name];
      await admin.flushall();
      const relay = await startRelay(redis.url);
      try {
        await scenario(relay);
      } finally {
        await relay.stop();
      }
    }
  } finally {
    admin.disconnect();
    await redis.stop();
  }
}

await main();
