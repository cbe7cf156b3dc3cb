import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/core/config/config.js';
import { registry } from '../../src/core/metrics.js';
import { encodeIntent } from '../../src/push/intent.js';
import { PUSH_QUEUE, pushJobId, tokenDigest } from '../../src/push/jobs.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { WriteAck } from '../../src/core/redis/write-ack.js';
import { queueKey, queuePrefix } from '../../src/core/queue/prefix.js';
import { THIRD_PARTY_AUTH_REASON } from '../../src/push/fcm/fcm.js';
import { TokenStore } from '../../src/push/tokens/store.js';
import type { ActionRecord } from '../../src/mailbox/store.js';
import { get, post, startTestApi, testEnv, type TestApi } from '../helpers/api.js';
import {
  fcmError,
  FakeFcm,
  INVALID_TOKEN,
  SENDER_ID_MISMATCH,
  THIRD_PARTY_AUTH_ERROR,
  UNAVAILABLE,
  UNREGISTERED,
} from '../helpers/fake-fcm.js';
import { parsePrometheus, valueOf } from '../helpers/prometheus.js';
import { createRedis } from '../../src/core/redis/clients.js';
import { redis, testRedis, testTopology } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';
import { startTestWorker, type TestWorker } from '../helpers/worker.js';
import { INTAKE_GROUP, PushIntake } from '../../src/push/intake.js';
import { Queue } from 'bullmq';
import { createLogger } from '../../src/core/log.js';

const PAIR = 'bc1q' + 'p'.repeat(58);
const OTHER_PAIR = 'bc1q' + 'o'.repeat(58);
const PAYLOAD = '02000000' + 'ab'.repeat(40);
const TX = { chain: 'btc', wkIdentity: PAIR, action: 'tx', payload: PAYLOAD, path: '0-0' };
const TXID = { chain: 'btc', wkIdentity: PAIR, action: 'txid', payload: 'f'.repeat(64) };
/** Long and distinctive, so any leak of one into a log or a push is found by a plain search. */
const token = (name: string) => `fcm-device-${name}-${'t'.repeat(140)}`;
const keys = keysFor('relay:');

const jobKey = (id: string) => queueKey('relay:', PUSH_QUEUE, id);
const isCompleted = async (id: string) =>
  (await redis().zscore(queueKey('relay:', PUSH_QUEUE, 'completed'), id)) !== null;
const jobData = async (id: string) => JSON.parse((await redis().hget(jobKey(id), 'data'))!);
const intents = async () =>
  (await redis().xrange(keys.pushIntents, '-', '+')).map(([, fields]) => Object.fromEntries(pairs(fields)));
const pairs = (fields: string[]) => fields.flatMap((f, i) => (i % 2 ? [] : [[f, fields[i + 1]!] as const]));
/** Every intent ever appended, taken or not (XINFO STREAM's entries-added). */
const intentsAppended = async () => {
  if ((await redis().exists(keys.pushIntents)) === 0) return 0;
  const info = (await redis().call('XINFO', 'STREAM', keys.pushIntents)) as unknown[];
  return Number(info[info.indexOf('entries-added') + 1]);
};
/** An intake of its own, outside any worker, with the queue it fills; `start()` is left to the test. */
async function startIntake(options: { forgetAfterMs?: number } = {}) {
  const queueClient = createRedis(testTopology(), 'worker');
  const queue = new Queue(PUSH_QUEUE, { connection: queueClient, prefix: queuePrefix('relay:', PUSH_QUEUE) });
  await queue.waitUntilReady();
  const intake = new PushIntake({
    redis: createRedis(testTopology(), 'worker'),
    keys,
    queue,
    jobOptions: {},
    claimIdleMs: 60_000,
    livenessIntervalMs: 10_000,
    log: createLogger('error', {}, () => {}),
    ...options,
  });
  const close = async () => {
    await queue.close();
    queueClient.disconnect();
  };
  return { intake, queueClient, close };
}

const intentsTaken = () =>
  waitFor('every intent taken', async () => (await redis().xlen(keys.pushIntents)) === 0);

async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  return valueOf(parsePrometheus(await registry.metrics()), name, labels);
}

describe('push notifications (docs/api.md#what-a-push-carries)', () => {
  let api: TestApi;
  let fcm: FakeFcm;
  let worker: TestWorker | undefined;

  const register = async (wkIdentity: string, side: 'keyToken' | 'walletToken', ...names: string[]) => {
    for (const name of names) {
      const res = await post(api.url, '/v1/token', { wkIdentity, [side]: token(name) });
      expect(res.status, res.text).to.equal(200);
    }
  };
  const postAction = async (body: object): Promise<ActionRecord> => {
    const res = await post(api.url, '/v1/action', body);
    expect(res.status, res.text).to.equal(200);
    return res.body.data;
  };
  const startFcmWorker = async (env: Record<string, string> = {}) => {
    worker = await startTestWorker({
      PUSH_RETRY_BASE_MS: '50',
      PUSH_MAX_ATTEMPTS: '3',
      PUSH_PROVIDER: 'fcm',
      FCM_SERVICE_ACCOUNT_FILE: fcm.serviceAccountFile(),
      FCM_API_URL: fcm.url,
      ...env,
    });
    return worker;
  };
  const completed = (record: ActionRecord) => {
    const id = pushJobId(record);
    return waitFor(`push job of ${record.action} completed`, () => isCompleted(id)).then(() => id);
  };
  const keyTokens = (pair = PAIR) => redis().zrange(keys.tokens(pair, 'key'), 0, -1);
  const owner = (name: string) => redis().get(keys.tokenOwner('key', token(name)));

  before(async () => {
    api = await startTestApi();
  });
  after(() => api.stop());
  beforeEach(async () => {
    fcm = await new FakeFcm().start();
  });
  afterEach(async () => {
    await worker?.stop();
    const logged = JSON.stringify(worker?.logs ?? []) + JSON.stringify(api.logs);
    worker = undefined;
    await fcm.stop();
    // Nothing of a request reaches Google: no identity, no payload (neither in pushes nor in token requests).
    const received = fcm.upstream.requests.map((r) => r.path + r.body).join('\n');
    for (const secret of [PAIR, OTHER_PAIR, PAYLOAD]) expect(received).to.not.include(secret);
    // Push tokens and the access token never reach a log line.
    expect(logged).to.not.include('fcm-device-');
    expect(logged).to.not.include('ya29.');
    expect(fcm.jwtErrors).to.deep.equal([]);
  });

  it('sends one FCM v1 message per key token of a request: generic text, the type only, TTL and collapse key', async () => {
    await register(PAIR, 'keyToken', 'k1', 'k2');
    await register(PAIR, 'walletToken', 'w1');
    await startFcmWorker();
    const record = await postAction({ ...TX, utxos: [{ txid: 'c'.repeat(64), vout: 1, satoshis: '12345' }] });
    const id = await completed(record);

    expect(fcm.sentTo().sort()).to.deep.equal([token('k1'), token('k2')]);
    const expiresAtMs = Date.parse(record.expiresAt);
    for (const sent of fcm.sends) {
      expect(sent.headers.authorization).to.equal('Bearer ya29.fake-1');
      expect(sent.headers['content-type']).to.equal('application/json');
      const { message } = sent.json as { message: Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
      const ttl = Number(/^(\d+)s$/.exec(message.android.ttl)![1]);
      expect(ttl).to.be.within(1, 900);
      expect(sent.json).to.deep.equal({
        message: {
          token: message.token,
          notification: { title: 'Transaction request', body: 'Open your key app to review and sign' },
          data: { action: 'tx' },
          android: { priority: 'high', ttl: `${ttl}s`, collapse_key: 'multisig-relay' },
          apns: {
            headers: {
              'apns-priority': '10',
              'apns-expiration': String(Math.floor(expiresAtMs / 1000)),
              'apns-collapse-id': 'multisig-relay',
            },
          },
        },
      });
      // Nothing of the request reaches the push service: no payload, identity, path, chain or coins.
      for (const secret of [PAYLOAD, PAIR, '0-0', 'btc', 'c'.repeat(64), '12345']) {
        expect(sent.body).to.not.include(secret);
      }
    }
    // The job keeps token digests, never tokens.
    const data = await jobData(id);
    expect(data.done.sort()).to.deep.equal([tokenDigest(token('k1')), tokenDigest(token('k2'))].sort());
    expect(JSON.stringify(data)).to.not.include('fcm-device-');
  });

  it('the apps’ recovery and chain-sync types are pushed to the right side', async () => {
    await register(PAIR, 'keyToken', 'k1');
    await register(PAIR, 'walletToken', 'w1');
    await startFcmWorker();
    const sides: Record<string, string> = {
      recoveryrequest: 'k1',
      chainsyncrequest: 'k1',
      recoveryresponse: 'w1',
      recoverydenied: 'w1',
      chainsyncrejected: 'w1',
    };
    for (const [action, to] of Object.entries(sides)) {
      await completed(await postAction({ ...TXID, action }));
      const last = fcm.sends.at(-1)!.json as { message: { token: string; data: object } };
      expect([last.message.token, last.message.data]).to.deep.equal([token(to), { action }]);
    }
    expect(fcm.sends).to.have.length(5);
  });

  it('a reply goes to the wallet tokens; a type the table does not route queues nothing', async () => {
    await register(PAIR, 'keyToken', 'k1');
    await register(PAIR, 'walletToken', 'w1', 'w2');
    await startFcmWorker();
    await completed(await postAction(TXID));
    expect(fcm.sentTo().sort()).to.deep.equal([token('w1'), token('w2')]);
    expect((fcm.sends[0]!.json as { message: { notification: object } }).message.notification).to.deep.equal({
      title: 'Transaction signed',
      body: 'Open your wallet to continue',
    });

    const appended = await intentsAppended();
    const note = await postAction({ ...TXID, action: 'somethingelse' });
    expect(await intentsAppended()).to.equal(appended);
    expect(await redis().exists(jobKey(pushJobId(note)))).to.equal(0);
    expect(await redis().get(`relay:action:${PAIR}`)).to.include('somethingelse');
  });

  it('fetches one access token with a verified JWT and shares it across concurrent jobs', async () => {
    const pairs = ['pairA', 'pairB', 'pairC', 'pairD'];
    for (const pair of pairs) await register(pair, 'keyToken', `${pair}-1`, `${pair}-2`);
    await startFcmWorker();
    const records = await Promise.all(pairs.map((pair) => postAction({ ...TX, wkIdentity: pair })));
    await Promise.all(records.map(completed));
    expect(fcm.sends).to.have.length(8);
    expect(fcm.tokenRequests).to.have.length(1);
    const form = new URLSearchParams(fcm.tokenRequests[0]!.body);
    expect([...form.keys()].sort()).to.deep.equal(['assertion', 'grant_type']);
    expect(fcm.tokenRequests[0]!.headers['content-type']).to.equal('application/x-www-form-urlencoded');
  });

  it('UNREGISTERED, INVALID_ARGUMENT about the token and SENDER_ID_MISMATCH remove the token for good', async () => {
    await register(PAIR, 'keyToken', 'gone', 'invalid', 'mismatch', 'fine', 'badfield');
    fcm
      .script(token('gone'), UNREGISTERED)
      .script(token('invalid'), INVALID_TOKEN)
      .script(token('mismatch'), SENDER_ID_MISMATCH)
      // A bad field of the message (not the token) is no reason to drop the token.
      .script(
        token('badfield'),
        fcmError(400, 'INVALID_ARGUMENT', undefined, [
          {
            '@type': 'type.googleapis.com/google.rpc.BadRequest',
            fieldViolations: [{ field: 'message.android.ttl', description: 'Invalid TTL' }],
          },
        ]),
      );
    await startFcmWorker();
    const before = {
      removed: await metric('relay_push_messages_total', { outcome: 'token_removed' }),
      failed: await metric('relay_push_messages_total', { outcome: 'failed' }),
      sent: await metric('relay_push_messages_total', { outcome: 'sent' }),
    };
    await completed(await postAction(TX));

    expect(fcm.sends).to.have.length(5);
    expect((await keyTokens()).sort()).to.deep.equal([token('badfield'), token('fine')].sort());
    expect([await owner('gone'), await owner('invalid'), await owner('mismatch')]).to.deep.equal([
      null,
      null,
      null,
    ]);
    expect([await owner('fine'), await owner('badfield')]).to.deep.equal([PAIR, PAIR]);
    expect(await metric('relay_push_messages_total', { outcome: 'token_removed' })).to.equal(
      before.removed + 3,
    );
    expect(await metric('relay_push_messages_total', { outcome: 'failed' })).to.equal(before.failed + 1);
    expect(await metric('relay_push_messages_total', { outcome: 'sent' })).to.equal(before.sent + 1);

    // The next request goes to the remaining tokens only.
    fcm.upstream.requests.length = 0;
    await completed(await postAction(TX));
    expect(fcm.sentTo().sort()).to.deep.equal([token('badfield'), token('fine')].sort());
  });

  it('5xx: the job retries with backoff, sending again only to the tokens that failed', async () => {
    await register(PAIR, 'keyToken', 'flaky', 'steady');
    fcm.script(token('flaky'), UNAVAILABLE, fcmError(500, 'INTERNAL', 'INTERNAL'));
    await startFcmWorker();
    const id = await completed(await postAction(TX));

    expect(fcm.sentTo().filter((t) => t === token('steady'))).to.have.length(1);
    expect(fcm.sentTo().filter((t) => t === token('flaky'))).to.have.length(3);
    expect(await redis().hget(jobKey(id), 'atm')).to.equal('3');
    expect((await jobData(id)).done).to.have.length(2);
    expect(await keyTokens()).to.have.length(2);
  });

  it('a 429 storm pauses the whole queue for its Retry-After (no attempt spent); every job is sent once after', async function () {
    // The pause is long enough to see jobs held by it on a busy machine; every wait below outlasts it.
    const pauseMs = 10_000;
    this.timeout(pauseMs + 40_000);
    await register(PAIR, 'keyToken', 'limited');
    const pairs = Array.from({ length: 5 }, (_, i) => `bc1q${String(i).repeat(58)}`);
    for (const [i, pair] of pairs.entries()) await register(pair, 'keyToken', `other${i}`);
    fcm.script(token('limited'), {
      ...fcmError(429, 'RESOURCE_EXHAUSTED', 'QUOTA_EXCEEDED'),
      headers: { 'retry-after': String(pauseMs / 1000) },
    });
    const limiter = queueKey('relay:', PUSH_QUEUE, 'limiter');
    await startFcmWorker();
    const first = await postAction(TX);
    // The limiter key also counts jobs per second (the worker's limiter); a 429 sets it far above that.
    await waitFor('the queue-wide limit', async () => Number(await redis().get(limiter)) > 1000);
    expect(await redis().pttl(limiter)).to.be.within(1, pauseMs);
    // Jobs added while the limit holds wait in the queue: no send reaches FCM until it lapses.
    const others = [];
    for (const pair of pairs) others.push(await postAction({ ...TX, wkIdentity: pair }));
    const waiting = () => redis().lrange(queueKey('relay:', PUSH_QUEUE, 'wait'), 0, -1);
    const ids = others.map((record) => pushJobId(record));
    await waitFor('the jobs waiting', async () => {
      const listed = await waiting();
      return ids.every((id) => listed.includes(id));
    });
    const paused = await redis().pttl(limiter);
    expect(paused).to.be.above(0);
    expect(fcm.sends).to.have.length(1);

    // The rest of the pause, then the sends, however slow the machine.
    for (const record of [first, ...others]) {
      await waitFor('a paused job completed', () => isCompleted(pushJobId(record)), paused + 20_000);
    }
    expect(fcm.sentTo().filter((t) => t === token('limited'))).to.have.length(2);
    for (const i of pairs.keys())
      expect(fcm.sentTo().filter((t) => t === token(`other${i}`))).to.have.length(1);
    // Paused, not failed: the limited job took its one real attempt.
    expect(await redis().hget(jobKey(pushJobId(first)), 'atm')).to.equal('1');
    expect(
      worker!.logs.some((l) => l.msg === 'FCM rate limit: push queue paused' && l.waitMs === pauseMs),
    ).to.equal(true);
  });

  it('PUSH_PER_PAIR_PER_MINUTE counts a job once: after a 429 it runs again and is delivered, not throttled', async () => {
    const pair = `bc1q${'7'.repeat(58)}`;
    await register(pair, 'keyToken', 'once');
    fcm.script(token('once'), {
      ...fcmError(429, 'RESOURCE_EXHAUSTED', 'QUOTA_EXCEEDED'),
      headers: { 'retry-after': '1' },
    });
    await startFcmWorker({ PUSH_PER_PAIR_PER_MINUTE: '1' });
    const record = await postAction({ ...TX, wkIdentity: pair });
    const id = await completed(record);
    expect(fcm.sentTo().filter((t) => t === token('once'))).to.have.length(2);
    expect(worker!.logs.filter((l) => l.msg === 'push skipped' && l.jobId === id)).to.deep.equal([]);
    expect(await redis().get(keys.pushCount(pair, 'key'))).to.equal('1');
  });

  it('401: the access token is dropped and fetched again once', async () => {
    await register(PAIR, 'keyToken', 'k1');
    await startFcmWorker();
    await completed(await postAction(TX));
    expect(fcm.tokenRequests).to.have.length(1);

    fcm.revokeAll();
    await completed(await postAction(TX));
    expect(fcm.tokenRequests).to.have.length(2);
    // The second job's first send met the revoked token (401); its resend used the new one.
    expect(fcm.sends.map((s) => s.headers.authorization)).to.deep.equal([
      'Bearer ya29.fake-1',
      'Bearer ya29.fake-1',
      'Bearer ya29.fake-2',
    ]);
  });

  it('401 THIRD_PARTY_AUTH_ERROR (a bad APNs key) fails that token with its cause; the access token is kept', async () => {
    await register(PAIR, 'keyToken', 'apns-broken', 'fine');
    fcm.script(token('apns-broken'), THIRD_PARTY_AUTH_ERROR, THIRD_PARTY_AUTH_ERROR);
    await startFcmWorker();
    const id = await completed(await postAction(TX));
    expect(fcm.tokenRequests).to.have.length(1);
    expect(fcm.sentTo().filter((t) => t === token('apns-broken'))).to.have.length(1);
    expect(await redis().hget(jobKey(id), 'atm')).to.equal('1');
    expect(await keyTokens()).to.have.length(2);
    const line = worker!.logs.find((l) => l.msg === 'push sent' && l.jobId === id)!;
    expect(line).to.deep.include({ sent: 1, failed: 1, reasons: { [THIRD_PARTY_AUTH_REASON]: 1 } });
  });

  it('401 UNAUTHENTICATED however fresh the token: one forced refresh per interval, the job retries, then fails', async () => {
    await register(PAIR, 'keyToken', 'a', 'b', 'c', 'd', 'e');
    fcm.refuseAccessTokens = true;
    await startFcmWorker();
    const record = await postAction(TX);
    const id = pushJobId(record);
    await waitFor(
      'the job failed for good',
      async () => (await redis().zscore(queueKey('relay:', PUSH_QUEUE, 'failed'), id)) !== null,
    );
    // Attempt 1: every token tried with the first token and once more with the one refetched; attempts 2 and 3
    // (within the interval) once each, without another token request.
    expect(fcm.tokenRequests).to.have.length(2);
    expect(fcm.sends).to.have.length(20);
    expect(await redis().hget(jobKey(id), 'atm')).to.equal('3');
    expect(await keyTokens()).to.have.length(5);
  });

  it('shutdown mid-job: progress is kept, the job goes back to wait, the next worker sends only to the rest', async () => {
    await register(PAIR, 'keyToken', 'quick', 'slow');
    fcm.script(token('slow'), { status: 200, body: {}, delayMs: 10_000 });
    const first = await startFcmWorker({ SHUTDOWN_TIMEOUT_MS: '300' });
    const record = await postAction(TX);
    const id = pushJobId(record);
    await waitFor('both sends under way', () => fcm.sends.length === 2);
    await first.stop();

    expect(await redis().lrange(queueKey('relay:', PUSH_QUEUE, 'wait'), 0, -1)).to.deep.equal([id]);
    expect((await jobData(id)).done).to.deep.equal([tokenDigest(token('quick'))]);
    expect(first.logs.some((l) => l.msg === 'push job released at shutdown' && l.jobId === id)).to.equal(
      true,
    );
    expect(JSON.stringify(first.logs)).to.not.include('fcm-device-');

    await startFcmWorker();
    await completed(record);
    expect(fcm.sentTo().filter((t) => t === token('quick'))).to.have.length(1);
    expect(fcm.sentTo().filter((t) => t === token('slow'))).to.have.length(2);
  });

  it('skips a request that was superseded by its reply, or whose mailbox expired', async () => {
    await register(PAIR, 'keyToken', 'k1');
    await register(PAIR, 'walletToken', 'w1');
    await register(OTHER_PAIR, 'keyToken', 'other');
    const skippedBefore = {
      superseded: await metric('relay_push_skipped_total', { reason: 'superseded' }),
      expired: await metric('relay_push_skipped_total', { reason: 'expired' }),
    };
    // No worker yet: both jobs wait while the mailboxes change under them.
    const request = await postAction(TX);
    const reply = await postAction(TXID);
    const gone = await postAction({ ...TX, wkIdentity: OTHER_PAIR });
    await redis().del(`relay:action:${OTHER_PAIR}`);

    await startFcmWorker();
    await Promise.all([completed(request), completed(reply), completed(gone)]);
    expect(fcm.sentTo()).to.deep.equal([token('w1')]);
    expect(await metric('relay_push_skipped_total', { reason: 'superseded' })).to.equal(
      skippedBefore.superseded + 1,
    );
    expect(await metric('relay_push_skipped_total', { reason: 'expired' })).to.equal(
      skippedBefore.expired + 1,
    );
    expect(JSON.parse((await redis().hget(jobKey(pushJobId(request)), 'returnvalue'))!)).to.deep.equal({
      skipped: 'superseded',
    });
  });

  it('the API appends one intent per pushed action; the intake queues a job only for a side with tokens', async () => {
    await register(PAIR, 'walletToken', 'w1');
    // No worker yet: the intent waits in the stream, naming the record and never its payload.
    const unannounced = await postAction(TX);
    expect(await redis().get(`relay:action:${PAIR}`)).to.equal(JSON.stringify(unannounced));
    expect(await intents()).to.deep.equal([
      {
        id: unannounced.id,
        wkIdentity: PAIR,
        action: 'tx',
        expiresAt: unannounced.expiresAt,
        createdAt: unannounced.createdAt,
      },
    ]);
    const taken = await metric('relay_push_intents_total', { outcome: 'no_tokens' });
    await startFcmWorker();
    // The key side has no token: the intent is taken and dropped, no job.
    await intentsTaken();
    expect(await redis().exists(jobKey(pushJobId(unannounced)))).to.equal(0);
    // A token past the registration TTL counts as none, as for the sender.
    await redis().zadd(keys.tokens(PAIR, 'key'), 1, token('expired'));
    const stale = await postAction(TX);
    await intentsTaken();
    expect(await redis().exists(jobKey(pushJobId(stale)))).to.equal(0);
    expect(await metric('relay_push_intents_total', { outcome: 'no_tokens' })).to.equal(taken + 2);
    await redis().zrem(keys.tokens(PAIR, 'key'), token('expired'));
    // The reply goes to the wallet side, which has one; then the key side gets one.
    const reply = await postAction(TXID);
    await completed(reply);
    await register(PAIR, 'keyToken', 'k1');
    const request = await postAction(TX);
    await completed(request);
    expect(fcm.sentTo()).to.deep.equal([token('w1'), token('k1')]);
    expect(await redis().hget(jobKey(pushJobId(request)), 'name')).to.equal('tx');
    expect(await jobData(pushJobId(request))).to.deep.equal({
      id: request.id,
      wkIdentity: PAIR,
      action: 'tx',
      expiresAt: request.expiresAt,
      createdAt: request.createdAt,
      done: [tokenDigest(token('k1'))],
    });
    // Retries and retention are the worker's settings, stored on the job.
    const opts = JSON.parse((await redis().hget(jobKey(pushJobId(request)), 'opts'))!);
    expect(opts).to.include({ attempts: 3 });
    expect(opts.backoff).to.deep.equal({ type: 'push', delay: 50 });
  });

  it('a repeated intent of the same stored record sends once', async () => {
    await register(PAIR, 'keyToken', 'k1');
    const record = await postAction(TX);
    const again = () => redis().xadd(keys.pushIntents, '*', ...encodeIntent(record));
    await again();
    await again();
    await startFcmWorker();
    await completed(record);
    await again();
    // Give a second job every chance to run: another action's job completing means the queue moved past it.
    await register(OTHER_PAIR, 'keyToken', 'o1');
    await completed(await postAction({ ...TX, wkIdentity: OTHER_PAIR }));
    await intentsTaken();
    expect(fcm.sentTo()).to.deep.equal([token('k1'), token('o1')]);
  });

  it('an intent taken by a worker that went away is claimed by another and sent once', async () => {
    await register(PAIR, 'keyToken', 'k1');
    const record = await postAction(TX);
    // A worker reads the intent, then dies before its job is queued: the intent stays pending on it.
    await redis().xgroup('CREATE', keys.pushIntents, INTAKE_GROUP, '0');
    const read = await redis().call(
      'XREADGROUP',
      'GROUP',
      INTAKE_GROUP,
      'gone-worker',
      'COUNT',
      10,
      'STREAMS',
      keys.pushIntents,
      '>',
    );
    expect(JSON.stringify(read)).to.include(record.id);
    await startFcmWorker({ PUSH_INTAKE_CLAIM_MS: '300' });
    await completed(record);
    await intentsTaken();
    expect(fcm.sentTo()).to.deep.equal([token('k1')]);
    expect(((await redis().xpending(keys.pushIntents, INTAKE_GROUP)) as unknown[])[0]).to.equal(0);
  });

  it('forgets workers that have gone and own no intent, never one that still owns intents', async () => {
    await redis().xgroup('CREATE', keys.pushIntents, INTAKE_GROUP, '0', 'MKSTREAM');
    await redis().xgroup('CREATECONSUMER', keys.pushIntents, INTAKE_GROUP, 'gone-idle');
    await redis().xadd(keys.pushIntents, '*', 'hello', 'world');
    await redis().call('XREADGROUP', 'GROUP', INTAKE_GROUP, 'gone-holding', 'STREAMS', keys.pushIntents, '>');
    const consumers = async () =>
      ((await redis().call('XINFO', 'CONSUMERS', keys.pushIntents, INTAKE_GROUP)) as string[][]).map(
        (c) => c[1],
      );
    await new Promise((resolve) => setTimeout(resolve, 100)); // both idle longer than forgetAfterMs
    const { intake, close } = await startIntake({ forgetAfterMs: 50 });
    intake.start();
    try {
      await waitFor('the idle consumer forgotten', async () => !(await consumers()).includes('gone-idle'));
      // The one holding an intent stays, so another worker can still claim what it read.
      expect(await consumers()).to.include('gone-holding');
    } finally {
      await intake.stop();
      await close();
    }
  });

  it('a stop during a batch lets it finish: its jobs queued, its intents acknowledged and deleted', async () => {
    await register(PAIR, 'keyToken', 'k1');
    const record = await postAction(TX);
    const ids = Array.from({ length: 20 }, (_, i) => `batch${i}`);
    for (const id of ids) await redis().xadd(keys.pushIntents, '*', ...encodeIntent({ ...record, id }));
    await redis().xgroup('CREATE', keys.pushIntents, INTAKE_GROUP, '0');
    const { intake, queueClient, close } = await startIntake();
    // The queue's connection waits on a list first, so the batch's jobs wait behind it: the stop lands mid-batch.
    const gate = queueClient.blpop('test:gate', 0);
    const pending = async () => ((await redis().xpending(keys.pushIntents, INTAKE_GROUP)) as [number])[0];
    try {
      intake.start();
      await waitFor('the batch read', async () => (await pending()) === ids.length + 1);
      const stopped = intake.stop();
      await redis().lpush('test:gate', 'open');
      await gate;
      await stopped;
      expect(await pending()).to.equal(0);
      expect(await redis().xlen(keys.pushIntents)).to.equal(0);
      for (const id of [record.id, ...ids]) expect(await redis().exists(jobKey(`push-${id}`))).to.equal(1);
    } finally {
      await close();
    }
  });

  it('entries that are no intent of the relay, and expired intents, are dropped without a job', async () => {
    await register(PAIR, 'keyToken', 'k1');
    const malformed = await metric('relay_push_intents_total', { outcome: 'malformed' });
    const expired = await metric('relay_push_intents_total', { outcome: 'expired' });
    const record = await postAction(TX);
    await redis().xadd(keys.pushIntents, '*', 'hello', 'world');
    await redis().xadd(
      keys.pushIntents,
      '*',
      ...encodeIntent({ ...record, id: 'x1', action: 'somethingelse' }),
    );
    await redis().xadd(keys.pushIntents, '*', ...encodeIntent({ ...record, id: 'x2', expiresAt: 'never' }));
    // Not a record id: it would become a job id, in a shape BullMQ may refuse.
    await redis().xadd(keys.pushIntents, '*', ...encodeIntent({ ...record, id: 'bad:id' }));
    const past = new Date(Date.now() - 1000).toISOString();
    await redis().xadd(keys.pushIntents, '*', ...encodeIntent({ ...record, id: 'x3', expiresAt: past }));
    await startFcmWorker();
    await completed(record);
    await intentsTaken();
    expect(await metric('relay_push_intents_total', { outcome: 'malformed' })).to.equal(malformed + 4);
    expect(await metric('relay_push_intents_total', { outcome: 'expired' })).to.equal(expired + 1);
    for (const id of ['x1', 'x2', 'x3', 'bad:id'])
      expect(await redis().exists(jobKey(`push-${id}`))).to.equal(0);
    expect(fcm.sentTo()).to.deep.equal([token('k1')]);
  });

  it('the intake outlives a Redis restart that lost its group, and takes the intents appended after it', async function () {
    // Generous: the API's and the intake's connections come back on ioredis' backoff, slower on a loaded machine.
    const afterRestartMs = 20_000;
    this.timeout(3 * afterRestartMs);
    await startFcmWorker();
    await waitFor('the intake’s group', async () => (await redis().exists(keys.pushIntents)) === 1);
    await testRedis().stop();
    await testRedis().start();
    // Redis came back empty: no group, no stream, no tokens. The API stores again once it reconnected.
    await waitFor(
      'the API to store again',
      async () => {
        const res = await post(api.url, '/v1/token', { wkIdentity: PAIR, keyToken: token('k1') });
        return res.status === 200;
      },
      afterRestartMs,
    );
    const record = await postAction(TX);
    await waitFor(
      `push job of ${record.action} completed`,
      () => isCompleted(pushJobId(record)),
      afterRestartMs,
    );
    expect(fcm.sentTo()).to.deep.equal([token('k1')]);
    const messages = worker!.logs.map((line) => line.msg);
    expect(messages).to.include.members(['push intake failed; retrying', 'push intake resumed']);
  });

  it('each append trims intents older than any action can live', async () => {
    const old = Date.now() - (api.config.action.ttlSeconds + 60) * 1000;
    await redis().xadd(keys.pushIntents, `${old}-0`, 'id', 'old1');
    await redis().xadd(keys.pushIntents, `${old + 1}-0`, 'id', 'old2');
    const record = await postAction(TX);
    expect(await intents()).to.deep.equal([
      {
        id: record.id,
        wkIdentity: PAIR,
        action: 'tx',
        expiresAt: record.expiresAt,
        createdAt: record.createdAt,
      },
    ]);
  });

  it('when the intent cannot be appended the action is still stored, answered 200, and the miss counted', async () => {
    await register(PAIR, 'keyToken', 'k1');
    const missesBefore = await metric('relay_push_enqueue_misses_total');
    // A key of another type where the stream belongs makes every XADD fail inside Redis.
    await redis().set(keys.pushIntents, 'not-a-stream');
    const res = await post(api.url, '/v1/action', TX);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data).to.include({ wkIdentity: PAIR, action: 'tx', payload: PAYLOAD });
    expect((await get(api.url, `/v1/action/${PAIR}`)).body.data).to.deep.equal(res.body.data);
    expect(await metric('relay_push_enqueue_misses_total')).to.equal(missesBefore + 1);
    const line = api.logs.find((entry) => entry.msg === 'push intent not appended');
    expect(line).to.include({ action: 'tx', recordId: res.body.data.id });
    expect(await redis().get(keys.pushIntents)).to.equal('not-a-stream');
  });

  it('PUSH_PROVIDER=log (default): logs the type and the token count, sends nothing', async () => {
    await register(PAIR, 'keyToken', 'k1', 'k2');
    worker = await startTestWorker();
    await completed(await postAction(TX));
    expect(fcm.upstream.requests).to.deep.equal([]);
    const line = worker.logs.find((l) => l.msg === 'push sent');
    expect(line).to.include({ action: 'tx', provider: 'log', tokens: 2, sent: 2 });
  });

  describe('token store', () => {
    let client: ReturnType<typeof createRedis>;
    let store: TokenStore;
    before(async () => {
      client = createRedis(testTopology(), 'store');
      store = new TokenStore(client, keys, WriteAck.none);
      // A fail-fast client refuses commands until it is connected.
      await waitFor('the store client to connect', () => client.status === 'ready');
    });
    after(() => client.disconnect());

    it('tokensFor lists one side’s tokens that the owner index still gives to the pair', async () => {
      await register(PAIR, 'keyToken', 'a', 'b');
      await register(PAIR, 'walletToken', 'w');
      // A stale set entry: the token's owner entry names another pair.
      await redis().zadd(keys.tokens(PAIR, 'key'), Date.now(), token('stray'));
      await redis().set(keys.tokenOwner('key', token('stray')), OTHER_PAIR);
      expect((await store.tokensFor(PAIR, 'key')).sort()).to.deep.equal([token('a'), token('b')]);
      expect(await store.tokensFor(PAIR, 'wallet')).to.deep.equal([token('w')]);
      expect(await store.tokensFor('nobody', 'key')).to.deep.equal([]);
    });

    it('remove drops the tokens, and their owner entries only where they still name the pair', async () => {
      await register(PAIR, 'keyToken', 'a', 'moved', 'keep');
      await register(OTHER_PAIR, 'keyToken', 'moved');
      expect(await store.remove(PAIR, 'key', [token('a'), token('moved')])).to.equal(1);
      expect(await keyTokens()).to.deep.equal([token('keep')]);
      expect(await owner('a')).to.equal(null);
      expect(await owner('moved')).to.equal(OTHER_PAIR);
      expect(await keyTokens(OTHER_PAIR)).to.deep.equal([token('moved')]);
    });
  });

  describe('configuration', () => {
    const fcmEnv = (file: string, role = 'worker') =>
      testEnv({ PUSH_PROVIDER: 'fcm', FCM_SERVICE_ACCOUNT_FILE: file, RELAY_ROLE: role });
    const rejects = (env: Record<string, string>, message: string) => {
      expect(() => loadConfig(env))
        .to.throw(ConfigError, message)
        .with.property('message')
        .that.does.not.include('PRIVATE KEY');
    };

    it('FCM_SERVICE_ACCOUNT_FILE is required with fcm, and must be a readable service-account key', () => {
      rejects(
        testEnv({ PUSH_PROVIDER: 'fcm' }),
        'FCM_SERVICE_ACCOUNT_FILE is required when PUSH_PROVIDER=fcm',
      );
      rejects(fcmEnv('/nonexistent/sa.json'), 'FCM_SERVICE_ACCOUNT_FILE /nonexistent/sa.json cannot be read');
      const file = fcm.serviceAccountFile();
      writeFileSync(file, 'not json');
      rejects(fcmEnv(file), `FCM_SERVICE_ACCOUNT_FILE ${file} is not JSON`);
      rejects(fcmEnv(fcm.serviceAccountFile({ type: 'authorized_user' })), 'is not a service-account key');
      rejects(fcmEnv(fcm.serviceAccountFile({ client_email: undefined })), 'has no "client_email"');
      rejects(
        fcmEnv(
          fcm.serviceAccountFile({
            private_key: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n',
          }),
        ),
        'has a "private_key" that is not a PEM private key',
      );
      rejects(testEnv({ PUSH_PROVIDER: 'apns' }), 'PUSH_PROVIDER must be one of fcm, log');
    });

    it('reads the key on the roles that send; an API pod needs neither the file nor the variable', () => {
      const file = fcm.serviceAccountFile();
      const worker = loadConfig(fcmEnv(file)).push;
      expect(worker.serviceAccount).to.include({ projectId: 'relay-test', tokenUri: `${fcm.url}/token` });
      expect(loadConfig(fcmEnv(file, 'all')).push.serviceAccount).to.include({ projectId: 'relay-test' });
      expect(loadConfig(fcmEnv('/nonexistent/sa.json', 'api')).push.serviceAccount).to.equal(undefined);
      expect(loadConfig(testEnv({ PUSH_PROVIDER: 'fcm', RELAY_ROLE: 'api' })).push.provider).to.equal('fcm');
      expect(loadConfig(testEnv()).push).to.include({
        provider: 'log',
        fcmApiUrl: 'https://fcm.googleapis.com',
      });
    });

    it('the worker refuses to start with a bad key file', async () => {
      const env = { PUSH_PROVIDER: 'fcm', FCM_SERVICE_ACCOUNT_FILE: fcm.serviceAccountFile({ type: 'x' }) };
      let error: unknown;
      await startTestWorker(env).catch((err: unknown) => (error = err));
      expect(error).to.be.instanceOf(ConfigError);
      expect(String(error)).to.include('FCM_SERVICE_ACCOUNT_FILE');
    });
  });
});
