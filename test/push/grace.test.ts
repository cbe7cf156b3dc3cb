import { expect } from 'chai';
import { registry } from '../../src/core/metrics.js';
import { queueKey } from '../../src/core/queue/prefix.js';
import { keysFor } from '../../src/core/redis/keys.js';
import type { ActionRecord } from '../../src/mailbox/index.js';
import { encodeIntent, PUSH_QUEUE } from '../../src/push/index.js';
import { post, startTestApi, type TestApi } from '../helpers/api.js';
import { FakeFcm, UNAVAILABLE } from '../helpers/fake-fcm.js';
import { parsePrometheus, valueOf } from '../helpers/prometheus.js';
import { redis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';
import { startTestWorker, type TestWorker } from '../helpers/worker.js';

const PAIR = 'bc1q' + 'g'.repeat(58);
const TX = {
  chain: 'btc',
  wkIdentity: PAIR,
  action: 'tx',
  payload: '02000000' + 'cd'.repeat(40),
  path: '0-0',
};
const token = (name: string) => `fcm-device-${name}-${'g'.repeat(140)}`;
const keys = keysFor('relay:');
/** Long enough that the intake has taken the intent well before it ends, even on a busy machine. */
const GRACE_MS = 3000;
const POD = 'pod-alive';

const jobKey = (record: ActionRecord) => queueKey('relay:', PUSH_QUEUE, `push-${record.id}`);
const jobField = (record: ActionRecord, field: string) => redis().hget(jobKey(record), field);
const completed = (record: ActionRecord) =>
  waitFor(
    `push job of ${record.id} completed`,
    async () =>
      (await redis().zscore(queueKey('relay:', PUSH_QUEUE, 'completed'), `push-${record.id}`)) !== null,
    GRACE_MS + 10_000,
  );
const metric = async (name: string, labels: Record<string, string> = {}) =>
  valueOf(parsePrometheus(await registry.metrics()), name, labels);
const delayed = () => metric('relay_push_delayed_total');
const skippedDelivered = () => metric('relay_push_skipped_total', { reason: 'delivered' });

/** The presence the relay's pods write for a side: `joined` sockets on `pod`, `ackCapable` of them. */
async function presence(
  side: 'key' | 'wallet',
  counts: { joined: number; ackCapable: number },
  podAlive = true,
) {
  await redis().hset(keys.presence(PAIR, side), `j:${POD}`, counts.joined, `a:${POD}`, counts.ackCapable);
  if (podAlive) await redis().set(keys.pod(POD), '1', 'EX', 45);
}

/** The receipt the first ack stores. */
const receipt = (record: ActionRecord, side: 'key' | 'wallet') =>
  redis().hsetnx(keys.receipts(PAIR), record.id, JSON.stringify({ side, at: new Date().toISOString() }));

describe('push only when it is needed: the ack grace (docs/api.md#push-only-when-it-is-needed)', function () {
  this.timeout(GRACE_MS + 30_000);
  let api: TestApi;
  let fcm: FakeFcm;
  let worker: TestWorker | undefined;

  const startFcmWorker = async (env: Record<string, string> = {}) => {
    worker = await startTestWorker({
      PUSH_RETRY_BASE_MS: '50',
      PUSH_MAX_ATTEMPTS: '3',
      PUSH_PROVIDER: 'fcm',
      FCM_SERVICE_ACCOUNT_FILE: fcm.serviceAccountFile(),
      FCM_API_URL: fcm.url,
      PUSH_ACK_GRACE_MS: String(GRACE_MS),
      ...env,
    });
  };
  const postAction = async (): Promise<ActionRecord> => {
    const res = await post(api.url, '/v1/action', TX);
    expect(res.status, res.text).to.equal(200);
    return res.body.data;
  };
  /** Waits until the intake queued the record's job and answers its delay. */
  const queuedDelay = (record: ActionRecord) =>
    waitFor('the job queued', async () => {
      const delay = await jobField(record, 'delay');
      return delay === null ? undefined : Number(delay);
    });

  before(async () => {
    api = await startTestApi();
  });
  after(() => api.stop());
  beforeEach(async () => {
    fcm = await new FakeFcm().start();
    const res = await post(api.url, '/v1/token', { wkIdentity: PAIR, keyToken: token('k1') });
    expect(res.status, res.text).to.equal(200);
  });
  afterEach(async () => {
    await worker?.stop();
    worker = undefined;
    await fcm.stop();
  });

  it('a side with no ack-capable socket is pushed at once: none, only plain sockets, or a dead pod’s', async () => {
    await startFcmWorker();
    const before = await delayed();
    const cases = [
      async () => {},
      () => presence('key', { joined: 2, ackCapable: 0 }),
      // The wallet side's socket is no reason to wait with the key's push.
      () => presence('wallet', { joined: 1, ackCapable: 1 }),
      async () => {
        await redis().del(keys.presence(PAIR, 'wallet'), keys.pod(POD));
        await presence('key', { joined: 1, ackCapable: 1 }, false);
      },
    ];
    for (const [i, setUp] of cases.entries()) {
      await setUp();
      const record = await postAction();
      expect(await queuedDelay(record), `case ${i}`).to.equal(0);
      await completed(record);
      expect(fcm.sends, `case ${i}`).to.have.length(i + 1);
      expect(JSON.parse((await jobField(record, 'returnvalue'))!)).to.deep.equal({
        sent: 1,
        removed: 0,
        failed: 0,
      });
    }
    expect(await delayed()).to.equal(before);
  });

  it('an ack-capable side that acks within the grace gets no push; the throttle is not drawn on', async () => {
    await presence('key', { joined: 1, ackCapable: 1 });
    await startFcmWorker();
    const [delayedBefore, skippedBefore] = [await delayed(), await skippedDelivered()];
    const record = await postAction();
    await receipt(record, 'key');
    expect(await queuedDelay(record)).to.be.above(0);
    await completed(record);

    expect(fcm.sends).to.deep.equal([]);
    expect(JSON.parse((await jobField(record, 'returnvalue'))!)).to.deep.equal({ skipped: 'delivered' });
    expect(await delayed()).to.equal(delayedBefore + 1);
    expect(await skippedDelivered()).to.equal(skippedBefore + 1);
    expect(await redis().exists(keys.pushCount(PAIR, 'key'))).to.equal(0);
    expect(await redis().keys('relay:pushrate:*')).to.deep.equal([]);
  });

  it('an ack-capable side that does not ack is pushed no sooner than createdAt + the grace', async () => {
    await presence('key', { joined: 1, ackCapable: 1 });
    await startFcmWorker();
    const before = await delayed();
    const record = await postAction();
    const createdMs = Date.parse(record.createdAt);
    expect(await queuedDelay(record)).to.be.above(0);
    const queuedAt = Number(await jobField(record, 'timestamp'));
    const delay = Number(await jobField(record, 'delay'));
    expect(queuedAt + delay).to.be.at.least(createdMs + GRACE_MS);
    await completed(record);

    expect(fcm.sentTo()).to.deep.equal([token('k1')]);
    expect(fcm.sends[0]!.at).to.be.at.least(createdMs + GRACE_MS);
    expect(await delayed()).to.equal(before + 1);
    expect(await redis().exists(keys.pushCount(PAIR, 'key'))).to.equal(1);
  });

  it('PUSH_ACK_GRACE_MS=0: an ack-capable side is pushed at once', async () => {
    await presence('key', { joined: 1, ackCapable: 1 });
    await startFcmWorker({ PUSH_ACK_GRACE_MS: '0' });
    const before = await delayed();
    const record = await postAction();
    expect(await queuedDelay(record)).to.equal(0);
    await completed(record);
    expect(fcm.sentTo()).to.deep.equal([token('k1')]);
    expect(await delayed()).to.equal(before);
  });

  it('an intent without createdAt, or with one ahead of the worker’s clock, waits the grace from its intake, no longer', async () => {
    await presence('key', { joined: 1, ackCapable: 1 });
    await startFcmWorker();
    const expiresAt = new Date(Date.now() + 600_000).toISOString();
    const intent = { wkIdentity: PAIR, action: 'tx', expiresAt };
    const ahead = new Date(Date.now() + 3_600_000).toISOString();
    await redis().xadd(keys.pushIntents, '*', ...encodeIntent({ ...intent, id: 'ahead1', createdAt: ahead }));
    // As an API pod of a relay without the grace appends it.
    await redis().xadd(keys.pushIntents, '*', 'id', 'older1', ...Object.entries(intent).flat());
    for (const id of ['ahead1', 'older1']) {
      const record = { id } as ActionRecord;
      const delay = await queuedDelay(record);
      expect(delay, id).to.be.within(1, GRACE_MS);
    }
  });

  it('a retry after the receipt appeared sends nothing more', async () => {
    const res = await post(api.url, '/v1/token', { wkIdentity: PAIR, keyToken: token('flaky') });
    expect(res.status, res.text).to.equal(200);
    fcm.script(token('flaky'), UNAVAILABLE);
    // A backoff long enough to write the receipt between the attempts.
    await startFcmWorker({ PUSH_RETRY_BASE_MS: '4000' });
    const skippedBefore = await skippedDelivered();
    const record = await postAction();
    await waitFor('the first attempt', () => fcm.sends.length === 2);
    await receipt(record, 'key');
    await completed(record);

    expect(fcm.sentTo().sort()).to.deep.equal([token('flaky'), token('k1')].sort());
    expect(await jobField(record, 'atm')).to.equal('2');
    expect(JSON.parse((await jobField(record, 'returnvalue'))!)).to.deep.equal({ skipped: 'delivered' });
    expect(await skippedDelivered()).to.equal(skippedBefore + 1);
  });

  it('a receipt of the other side does not stop the push', async () => {
    await presence('key', { joined: 1, ackCapable: 1 });
    await startFcmWorker({ PUSH_ACK_GRACE_MS: '100' });
    const record = await postAction();
    await receipt(record, 'wallet');
    await completed(record);
    expect(fcm.sentTo()).to.deep.equal([token('k1')]);
  });
});
