/**
 * `push-grace` phase of `npm run bench`: FCM messages per signing request when the key app is in the foreground,
 * connected as an authenticated stream socket (a signed `join` with `since`) that acks every request it receives
 * (goal 0; without the grace, 1). The wallet posts `tx` requests one at a time, each after the previous one's push
 * job finished; a worker in this process sends to the fake FCM of the tests, once with `PUSH_ACK_GRACE_MS=0` (the
 * push as before the grace) and once with the default grace.
 */
import { io, type Socket } from 'socket.io-client';
import { Redis } from 'ioredis';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/core/log.js';
import { queueKey } from '../src/core/queue/prefix.js';
import { keysFor } from '../src/core/redis/keys.js';
import { PUSH_QUEUE } from '../src/push/index.js';
import { ackCapable } from '../src/realtime/index.js';
import { startWorker } from '../worker/main.js';
import { FakeFcm } from '../test/helpers/fake-fcm.js';
import { pairOf, signed } from '../test/helpers/signing.js';
import { waitFor } from '../test/helpers/wait.js';
import { JSON_HEADERS } from './requests.js';
import { verdict, type Bench, type Phase } from './phase.js';

const REQUESTS = 20;
const GRACE_MS = 1500;
const PAIR = pairOf(Buffer.from('61'.repeat(32), 'hex'), Buffer.from('62'.repeat(32), 'hex'));
const DEVICE = `bench-key-device-${'d'.repeat(140)}`;
const keys = keysFor('relay:');

interface GraceRun {
  graceMs: number;
  requests: number;
  /** FCM messages to the key app's token per request. */
  messagesPerRequest: number;
  /** Requests whose key side was ack-capable right after the POST was answered. */
  ackCapable: number;
  /** Acks the relay answered `{ ok: true }`. */
  acked: number;
  /** Push jobs that finished as skipped: delivered. */
  skippedDelivered: number;
}

interface PushGraceResult {
  before: GraceRun;
  grace: GraceRun;
}

async function post(url: string, path: string, body: object): Promise<Record<string, unknown>> {
  const res = await fetch(url + path, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`POST ${path} answered ${res.status}: ${text}`);
  return (JSON.parse(text) as { data: Record<string, unknown> }).data;
}

/** The key app in the foreground: joins with `since` signed by the key, and acks each record it receives. */
async function keyApp(url: string, onAck: (id: string, ok: boolean) => void): Promise<Socket> {
  const socket = io(url, { path: '/v1/socket/key', transports: ['websocket'], reconnection: false });
  socket.on('tx', (record: { id: string }) => {
    socket.emit('ack', { wkIdentity: PAIR.wkIdentity, id: record.id }, (answer?: { ok?: boolean }) =>
      onAck(record.id, answer?.ok === true),
    );
  });
  const join = signed(
    { wkIdentity: PAIR.wkIdentity, since: { offset: 0 } },
    { purpose: 'join', pair: PAIR, by: 'key' },
  );
  const answer = await new Promise<{ ok?: boolean }>((resolve, reject) => {
    socket.on('connect_error', reject);
    socket.on('connect', () => socket.emit('join', join, resolve));
  });
  if (answer?.ok !== true) throw new Error(`the key app's join was answered ${JSON.stringify(answer)}`);
  return socket;
}

async function graceRun(bench: Bench, fcm: FakeFcm, admin: Redis, graceMs: number): Promise<GraceRun> {
  const config = loadConfig({
    ...bench.env,
    REDIS_URL: bench.redisUrl,
    RELAY_ROLE: 'worker',
    METRICS_PORT: '0',
    MARKET_REFRESH: 'off',
    PUSH_PROVIDER: 'fcm',
    FCM_SERVICE_ACCOUNT_FILE: fcm.serviceAccountFile(),
    FCM_API_URL: fcm.url,
    PUSH_ACK_GRACE_MS: String(graceMs),
  });
  // The intents other phases left are not this phase's to send.
  await admin.del(keys.pushIntents);
  const worker = await startWorker(
    config,
    createLogger('error', {}, () => {}),
  );
  const run: GraceRun = {
    graceMs,
    requests: REQUESTS,
    messagesPerRequest: 0,
    ackCapable: 0,
    acked: 0,
    skippedDelivered: 0,
  };
  // A join with offset 0 replays the records of the run before: only this run's records count.
  const acked = new Set<string>();
  const app = await keyApp(bench.relay.url, (id, ok) => ok && acked.add(id));
  const posted: string[] = [];
  const sentBefore = fcm.sentTo().filter((token) => token === DEVICE).length;
  try {
    for (let i = 0; i < REQUESTS; i++) {
      const record = await post(bench.relay.url, '/v1/action', {
        chain: 'btc',
        wkIdentity: PAIR.wkIdentity,
        action: 'tx',
        payload: '02000000' + 'ab'.repeat(200),
        path: '0-0',
      });
      posted.push(String(record.id));
      if (await ackCapable(admin, keys, PAIR.wkIdentity, 'key')) run.ackCapable++;
      const job = queueKey('relay:', PUSH_QUEUE, `push-${String(record.id)}`);
      const completed = queueKey('relay:', PUSH_QUEUE, 'completed');
      await waitFor(
        'the push job finished',
        async () => (await admin.zscore(completed, `push-${String(record.id)}`)) !== null,
        30_000,
      );
      if ((await admin.hget(job, 'returnvalue')) === '{"skipped":"delivered"}') run.skippedDelivered++;
    }
  } finally {
    app.close();
    await worker.stop();
  }
  const sent = fcm.sentTo().filter((token) => token === DEVICE).length - sentBefore;
  run.acked = posted.filter((id) => acked.has(id)).length;
  return { ...run, messagesPerRequest: sent / REQUESTS };
}

export const pushGrace: Phase<PushGraceResult> = {
  name: 'push-grace',
  key: 'pushGrace',
  async run(bench) {
    const { out } = bench;
    out(
      `FCM messages per request, the key app an authenticated stream socket that acks: ${REQUESTS} requests`,
    );
    const fcm = await new FakeFcm().start();
    const admin = new Redis(bench.redisUrl);
    try {
      await post(bench.relay.url, '/v1/token', { wkIdentity: PAIR.wkIdentity, keyToken: DEVICE });
      const before = await graceRun(bench, fcm, admin, 0);
      const grace = await graceRun(bench, fcm, admin, GRACE_MS);
      for (const run of [before, grace]) {
        out(
          `  PUSH_ACK_GRACE_MS=${run.graceMs}: ${run.messagesPerRequest} messages per request; ` +
            `ack-capable ${run.ackCapable}/${run.requests}, acks answered ok ${run.acked}, skipped as delivered ${run.skippedDelivered}`,
        );
      }
      return { before, grace };
    } finally {
      admin.disconnect();
      await fcm.stop();
    }
  },
  medians: ({ before, grace }) => [
    `FCM messages per request, key app acking: ${grace.messagesPerRequest} with the grace, ` +
      `${before.messagesPerRequest} without (goal 0: ${verdict(grace.messagesPerRequest === 0)})`,
  ],
};
