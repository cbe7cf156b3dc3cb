import { expect } from 'chai';
import { queueKey } from '../../src/core/queue/prefix.js';
import { PUSH_QUEUE, pushJobId } from '../../src/push/jobs.js';
import { SUPPORT_QUEUE } from '../../src/support/jobs.js';
import { post, startTestApi, type TestApi } from '../helpers/api.js';
import { FakeFcm } from '../helpers/fake-fcm.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { redis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';
import { startTestWorker, type TestWorker } from '../helpers/worker.js';

const PAIR = 'bc1q' + 's'.repeat(58);

interface Deployment {
  prefix: string;
  api: TestApi;
  worker: TestWorker;
  helpdesk: FakeUpstream;
  fcm: FakeFcm;
}

async function deployment(prefix: string): Promise<Deployment> {
  const helpdesk = await new FakeUpstream().start();
  const fcm = await new FakeFcm().start();
  const env = {
    KEY_PREFIX: prefix,
    SUBMISSIONS_PER_DAY: '100',
    HELPDESK_PROVIDER: 'webhook',
    HELPDESK_WEBHOOK_URL: `${helpdesk.url}/hook`,
    HELPDESK_WEBHOOK_SECRET: `${prefix}secret`,
    PUSH_PROVIDER: 'fcm',
    FCM_SERVICE_ACCOUNT_FILE: fcm.serviceAccountFile(),
    FCM_API_URL: fcm.url,
  };
  return { prefix, api: await startTestApi(env), worker: await startTestWorker(env), helpdesk, fcm };
}

/** Two deployments (production and staging) sharing one Redis, told apart by KEY_PREFIX only. */
describe('two KEY_PREFIX deployments on one Redis', () => {
  let prod: Deployment;
  let staging: Deployment;
  before(async () => {
    prod = await deployment('prod:');
    staging = await deployment('staging:');
  });
  after(async () => {
    for (const d of [prod, staging]) {
      await d?.worker.stop();
      await d?.api.stop();
      await d?.helpdesk.stop();
      await d?.fcm.stop();
    }
  });

  it('never touch each other’s jobs: forms reach only their own helpdesk, pushes only their own FCM', async () => {
    const submitted = new Map<Deployment, string[]>([
      [prod, []],
      [staging, []],
    ]);
    for (const [d, count] of [
      [prod, 6],
      [staging, 2],
    ] as const) {
      const token = await post(d.api.url, '/v1/token', { wkIdentity: PAIR, keyToken: `${d.prefix}device` });
      expect(token.status).to.equal(200);
      for (let i = 0; i < count; i++) {
        const message = `${d.prefix} form ${i}`;
        const res = await post(d.api.url, '/v1/contact', { name: 'Ann', email: 'ann@example.com', message });
        expect(res.status, res.text).to.equal(200);
        submitted.get(d)!.push(res.body.data.id);
      }
    }
    const pushes = new Map<Deployment, string>();
    for (const d of [prod, staging]) {
      const res = await post(d.api.url, '/v1/action', {
        chain: 'btc',
        wkIdentity: PAIR,
        action: 'tx',
        payload: 'ab',
        path: '0-0',
      });
      pushes.set(d, pushJobId(res.body.data));
    }

    for (const d of [prod, staging]) {
      const completed = (queue: string, id: string) =>
        redis()
          .zscore(queueKey(d.prefix, queue, 'completed'), id)
          .then((score) => score !== null);
      for (const id of submitted.get(d)!)
        await waitFor('the form delivered', () => completed(SUPPORT_QUEUE, id));
      await waitFor('the push sent', () => completed(PUSH_QUEUE, pushes.get(d)!));
    }
    for (const d of [prod, staging]) {
      const messages = d.helpdesk.requests.map((r) => (r.json as { description: string }).description);
      const own = submitted.get(d)!.map((_, i) => `${d.prefix} form ${i}`);
      expect(messages.sort()).to.deep.equal(own.sort());
      expect(d.fcm.sentTo()).to.deep.equal([`${d.prefix}device`]);
    }
    // Nothing of either deployment's queues lives outside its prefix.
    expect(await redis().keys('{bull:*')).to.deep.equal([]);
    expect(await redis().keys('bull:*')).to.deep.equal([]);
  });
});
