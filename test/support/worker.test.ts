import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/core/config/config.js';
import { retryAfterMs } from '../../src/core/outbound-http.js';
import { post, startTestApi, testEnv, type TestApi } from '../helpers/api.js';
import { runNode } from '../helpers/child.js';
import { FakeUpstream, type RecordedRequest } from '../helpers/fake-upstream.js';
import { redis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_DELIVERY, startTestWorker, type TestWorker } from '../helpers/worker.js';

const EMAIL = 'ann@example.com';
const ticket = {
  subject: 'Cannot <sign>',
  description: 'Line 1\nLine "2" & <b>bold</b>',
  type: 'Bug report',
  email: EMAIL,
};
const contact = { name: 'Ann Example', email: EMAIL, message: 'Hello,\nplease call me.' };
const PERSONAL = [EMAIL, 'Cannot <sign>', 'Line 1', 'Ann Example', 'please call'];

const jobKey = (id: string) => `relay:{bull:support}:support:${id}`;
const isCompleted = async (id: string) =>
  (await redis().zscore('relay:{bull:support}:support:completed', id)) !== null;
const isFailed = async (id: string) =>
  (await redis().zscore('relay:{bull:support}:support:failed', id)) !== null;
const attemptsMade = async (id: string) => Number((await redis().hget(jobKey(id), 'atm')) ?? 0);
const returnValue = async (id: string): Promise<unknown> =>
  JSON.parse((await redis().hget(jobKey(id), 'returnvalue'))!);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('support worker: delivery to the helpdesk', () => {
  let api: TestApi;
  let helpdesk: FakeUpstream;
  let worker: TestWorker | undefined;

  const submit = async (path: '/v1/ticket' | '/v1/contact', body: object, via = api): Promise<string> => {
    const res = await post(via.url, path, body);
    expect(res.status, res.text).to.equal(200);
    return res.body.data.id;
  };
  const webhookEnv = () => ({
    HELPDESK_PROVIDER: 'webhook',
    HELPDESK_WEBHOOK_URL: `${helpdesk.url}/hook`,
    HELPDESK_WEBHOOK_SECRET: 'hook-secret',
  });
  const startWorker = async (env: Record<string, string>) => {
    worker = await startTestWorker(env);
    return worker;
  };
  const submitWithAttempts = async (attempts: number, body: object): Promise<string> => {
    const other = await startTestApi({ ...FAST_DELIVERY, HELPDESK_MAX_ATTEMPTS: String(attempts) });
    try {
      return await submit('/v1/ticket', body, other);
    } finally {
      await other.stop();
    }
  };
  /** The one request the helpdesk received: a POST to `path`. */
  const onlyRequest = (path: string): RecordedRequest => {
    expect(helpdesk.requests).to.have.length(1);
    const [req] = helpdesk.requests as [RecordedRequest];
    expect(req.method).to.equal('POST');
    expect(req.path).to.equal(path);
    return req;
  };
  const delivered = (id: string) => waitFor(`job ${id} completed`, () => isCompleted(id));

  before(async () => {
    // Retry delays and attempts are job options, set when the API adds the job.
    api = await startTestApi({ ...FAST_DELIVERY, SUBMISSIONS_PER_DAY: '1000' });
  });
  after(() => api.stop());
  beforeEach(async () => {
    helpdesk = await new FakeUpstream().start();
  });
  afterEach(async () => {
    await worker?.stop();
    // Form contents are personal data: whatever the test did, none of it reached the worker's log.
    const logged = JSON.stringify(worker?.logs ?? []);
    for (const text of PERSONAL) expect(logged).to.not.include(text);
    worker = undefined;
    await helpdesk.stop();
  });

  it('freshdesk: one POST /api/v2/tickets with Basic apikey:X, the fixed codes, the mapped type and escaped HTML', async () => {
    helpdesk.respond(() => ({ status: 201, body: { id: 42, subject: 'echoed' } }));
    await startWorker({
      HELPDESK_PROVIDER: 'freshdesk',
      FRESHDESK_URL: helpdesk.url,
      FRESHDESK_API_KEY: 'fd-key',
    });
    const id = await submit('/v1/ticket', ticket);
    await delivered(id);

    const req = onlyRequest('/api/v2/tickets');
    expect(req.headers.authorization).to.equal(`Basic ${Buffer.from('fd-key:X').toString('base64')}`);
    expect(req.headers['content-type']).to.equal('application/json');
    expect(req.json).to.deep.equal({
      subject: 'Cannot <sign>',
      description: 'Line 1<br>Line &quot;2&quot; &amp; &lt;b&gt;bold&lt;/b&gt;',
      email: EMAIL,
      type: 'Question',
      status: 2,
      source: 2,
      priority: 1,
      tags: ['multisig-relay', 'ticket'],
    });
    expect(await returnValue(id)).to.deep.equal({ ticketId: '42' });
  });

  it('zendesk: POST /api/v2/tickets.json with token auth, Idempotency-Key = job id, requester from the email', async () => {
    helpdesk.respond(() => ({ status: 201, body: { ticket: { id: 7 } } }));
    await startWorker({
      HELPDESK_PROVIDER: 'zendesk',
      ZENDESK_URL: helpdesk.url,
      ZENDESK_EMAIL: 'agent@acme.test',
      ZENDESK_API_TOKEN: 'zd-token',
    });
    const ticketId = await submit('/v1/ticket', { ...ticket, type: 'Feature Request' });
    await delivered(ticketId);
    const contactId = await submit('/v1/contact', contact);
    await delivered(contactId);

    expect(helpdesk.requests).to.have.length(2);
    const auth = `Basic ${Buffer.from('agent@acme.test/token:zd-token').toString('base64')}`;
    for (const req of helpdesk.requests) {
      expect(req.method).to.equal('POST');
      expect(req.path).to.equal('/api/v2/tickets.json');
      expect(req.headers.authorization).to.equal(auth);
    }
    const [first, second] = helpdesk.requests as [RecordedRequest, RecordedRequest];
    expect(first.headers['idempotency-key']).to.equal(ticketId);
    expect(first.json).to.deep.equal({
      ticket: {
        subject: 'Cannot <sign>',
        comment: { body: ticket.description },
        requester: { email: EMAIL, name: EMAIL },
        type: 'question',
        tags: ['multisig-relay', 'ticket', 'feature_request'],
      },
    });
    expect(second.headers['idempotency-key']).to.equal(contactId);
    expect(second.json).to.deep.equal({
      ticket: {
        subject: 'Contact form: Ann Example',
        comment: { body: contact.message },
        requester: { email: EMAIL, name: 'Ann Example' },
        type: 'question',
        tags: ['multisig-relay', 'contact'],
      },
    });
    expect(await returnValue(contactId)).to.deep.equal({
      ticketId: '7',
    });
  });

  it('webhook: a contact message as JSON with X-Relay-Signature = HMAC-SHA256 of the exact body', async () => {
    helpdesk.respond(() => ({ status: 200, body: { ok: true } }));
    await startWorker(webhookEnv());
    const id = await submit('/v1/contact', contact);
    await delivered(id);

    const req = onlyRequest('/hook');
    const expected = createHmac('sha256', 'hook-secret').update(Buffer.from(req.body, 'utf8')).digest('hex');
    expect(req.headers['x-relay-signature']).to.equal(`sha256=${expected}`);
    expect(req.json).to.deep.equal({
      id,
      subject: 'Contact form: Ann Example',
      description: contact.message,
      type: 'Question',
      email: EMAIL,
      name: 'Ann Example',
      tags: ['multisig-relay', 'contact'],
    });
    expect(await returnValue(id)).to.deep.equal({});
  });

  it('duplicate submissions, before and after delivery, make one ticket', async () => {
    helpdesk.respond(() => ({ status: 201, body: {} }));
    const id = await submit('/v1/ticket', ticket);
    expect(await submit('/v1/ticket', { ...ticket, email: EMAIL.toUpperCase() })).to.equal(id);
    await startWorker(webhookEnv());
    await delivered(id);
    expect(await submit('/v1/ticket', ticket)).to.equal(id);
    await sleep(300);
    expect(helpdesk.requests).to.have.length(1);
    expect(await redis().llen('relay:{bull:support}:support:wait')).to.equal(0);
  });

  it('503s, a dropped connection and a timeout are retried with backoff until the helpdesk accepts', async () => {
    helpdesk.sequence([
      { status: 503 },
      { drop: true },
      { status: 201, delayMs: 1000 },
      { status: 502 },
      { status: 201, body: { id: 'done' } },
    ]);
    await startWorker({ ...webhookEnv(), HELPDESK_TIMEOUT_MS: '300' });
    const id = await submit('/v1/ticket', ticket);
    await delivered(id);
    expect(helpdesk.requests).to.have.length(5);
    expect(new Set(helpdesk.requests.map((req) => req.body)).size).to.equal(1);
    expect(await attemptsMade(id)).to.equal(5);
    expect(await returnValue(id)).to.deep.equal({ ticketId: 'done' });
  });

  it('a transient failure on the last attempt fails the job and keeps it for operators', async () => {
    helpdesk.respond(() => ({ status: 500 }));
    await startWorker(webhookEnv());
    const id = await submitWithAttempts(3, ticket);
    await waitFor('job failed', () => isFailed(id));
    expect(helpdesk.requests).to.have.length(3);
    expect(await redis().hget(jobKey(id), 'failedReason')).to.equal('helpdesk answered 500');
    expect(
      worker!.logs.some((line) => line.msg === 'support job failed for good' && line.jobId === id),
    ).to.equal(true);
  });

  it('429 waits for Retry-After and retries without spending an attempt', async () => {
    helpdesk.sequence([
      { status: 429, headers: { 'retry-after': '1' } },
      { status: 201, body: {} },
    ]);
    await startWorker(webhookEnv());
    const id = await submitWithAttempts(1, ticket);
    await delivered(id);
    const [limited, accepted] = helpdesk.requests as [RecordedRequest, RecordedRequest];
    expect(helpdesk.requests).to.have.length(2);
    expect(accepted.at - limited.at).to.be.at.least(950);
    expect(await attemptsMade(id)).to.equal(1);
  });

  it('a permanent 400 is tried once and kept as failed; the jobs script lists it and retries it', async function () {
    this.timeout(90_000); // three cold `node --import=tsx` starts of the jobs script
    helpdesk.respond(() => ({ status: 400, body: { errors: [{ message: `invalid ${EMAIL}` }] } }));
    await startWorker(webhookEnv());
    const id = await submit('/v1/ticket', ticket);
    await waitFor('job failed', () => isFailed(id));
    await sleep(500); // ten retry base delays: a retry would have happened by now
    expect(helpdesk.requests).to.have.length(1);
    expect(await attemptsMade(id)).to.equal(1);
    expect(await redis().hget(jobKey(id), 'failedReason')).to.equal('helpdesk answered 400');
    const ttlDays = await redis().hget(jobKey(id), 'opts');
    expect(JSON.parse(ttlDays!).removeOnFail).to.deep.equal({ age: 7 * 86_400 });

    const listed = await jobsScript('failed');
    expect(listed.code).to.equal(0);
    expect(listed.stdout).to.include('failed 1');
    expect(listed.stdout).to.include(id);
    expect(listed.stdout).to.include('attempts 1/12');
    expect(listed.stdout).to.include('helpdesk answered 400');
    expect(listed.stdout).to.not.include(EMAIL);

    helpdesk.respond(() => ({ status: 201, body: {} }));
    const retried = await jobsScript('retry', id);
    expect(retried).to.deep.include({ code: 0, stdout: `retrying ${id}\n` });
    await delivered(id);
    expect(helpdesk.requests).to.have.length(2);

    expect(await jobsScript('retry', id)).to.deep.include({
      code: 1,
      stderr: `job ${id} is completed, not failed\n`,
    });
  });

  it('a redirect is not a delivery: the job fails at once', async () => {
    helpdesk.respond(() => ({ status: 302, headers: { location: '/elsewhere' } }));
    await startWorker(webhookEnv());
    const id = await submit('/v1/ticket', ticket);
    await waitFor('job failed', () => isFailed(id));
    onlyRequest('/hook');
    expect(await redis().hget(jobKey(id), 'failedReason')).to.equal('helpdesk answered 302');
  });

  it('the jobs script retries every failed job with retry-all', async function () {
    this.timeout(60_000); // a cold `node --import=tsx` start of the jobs script
    helpdesk.respond(() => ({ status: 422 }));
    await startWorker(webhookEnv());
    const ids = [await submit('/v1/ticket', ticket), await submit('/v1/contact', contact)];
    for (const id of ids) await waitFor('job failed', () => isFailed(id));
    helpdesk.respond(() => ({ status: 201, body: {} }));
    expect(await jobsScript('--queue', 'support', 'retry-all')).to.deep.include({
      code: 0,
      stdout: 'support: retrying 2 failed job(s)\n',
    });
    for (const id of ids) await delivered(id);
    expect(helpdesk.requests).to.have.length(4);
  });

  it('a worker killed with SIGKILL mid-request loses nothing: a second worker delivers the job', async function () {
    this.timeout(60_000); // a cold `node --import=tsx` start takes seconds on a busy machine
    helpdesk.sequence([{ delayMs: 30_000 }, { status: 201, body: { id: 'after-crash' } }]);
    const env = testEnv({ ...FAST_DELIVERY, ...webhookEnv(), RELAY_ROLE: 'worker' });
    const child = spawn(process.execPath, ['--import=tsx', 'src/main.ts'], {
      env: { ...process.env, ...env },
      stdio: 'ignore',
    });
    try {
      const id = await submit('/v1/ticket', ticket);
      await waitFor('the first worker calls the helpdesk', () => helpdesk.requests.length === 1, 45_000);
      expect(await redis().lrange('relay:{bull:support}:support:active', 0, -1)).to.deep.equal([id]);
      child.kill('SIGKILL');
      await once(child, 'exit');

      await startWorker(webhookEnv());
      await delivered(id);
      expect(helpdesk.requests).to.have.length(2);
      const [lost, redelivered] = helpdesk.requests as [RecordedRequest, RecordedRequest];
      expect(redelivered.body).to.equal(lost.body);
      expect(redelivered.json).to.deep.include({ id });
      expect(await returnValue(id)).to.deep.equal({
        ticketId: 'after-crash',
      });
      expect(worker!.logs.some((line) => String(line.msg).startsWith('support job stalled'))).to.equal(true);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });

  it('graceful stop waits for the active delivery to finish', async () => {
    helpdesk.respond(() => ({ status: 201, body: {}, delayMs: 300 }));
    const running = await startWorker(webhookEnv());
    const id = await submit('/v1/ticket', ticket);
    await waitFor('delivery started', () => helpdesk.requests.length === 1);
    await running.stop();
    expect(await isCompleted(id)).to.equal(true);
    expect(running.logs.map((line) => line.msg)).to.include('support worker stopped');
  });

  it('graceful stop past the grace period aborts the request and puts the job back, no attempt spent', async () => {
    helpdesk.sequence([{ delayMs: 10_000 }, { status: 201, body: {} }]);
    const running = await startWorker({ ...webhookEnv(), SHUTDOWN_TIMEOUT_MS: '200' });
    const id = await submit('/v1/ticket', ticket);
    await waitFor('delivery started', () => helpdesk.requests.length === 1);
    await running.stop();
    expect(await redis().lrange('relay:{bull:support}:support:wait', 0, -1)).to.deep.equal([id]);
    expect(await attemptsMade(id)).to.equal(0);

    await startWorker(webhookEnv());
    await delivered(id);
    expect(helpdesk.requests).to.have.length(2);
  });
});

/** `npm run jobs -- <args>` as an operator runs it (without npm's banner), against the test Redis. */
function jobsScript(...args: string[]) {
  return runNode(['scripts/jobs.ts', ...args], testEnv(), 45_000);
}

describe('Retry-After of a helpdesk 429', () => {
  const now = Date.parse('2026-11-21T20:00:00Z');
  for (const [header, ms] of [
    ['7', 7000],
    [' 120 ', 120_000],
    ['Sat, 21 Nov 2026 20:00:30 GMT', 30_000],
    ['0', 1000],
    ['Sat, 21 Nov 2026 19:00:00 GMT', 1000],
    ['86400', 3_600_000],
    ['soon', undefined],
    ['-5', undefined],
    [undefined, undefined],
  ] as const) {
    it(`${JSON.stringify(header)} → ${ms} ms`, () => {
      expect(retryAfterMs(header, now)).to.equal(ms);
    });
  }
});

describe('helpdesk configuration', () => {
  for (const [env, message] of [
    [{ HELPDESK_PROVIDER: 'freshdesk', FRESHDESK_URL: 'https://acme.freshdesk.com' }, 'FRESHDESK_API_KEY'],
    [
      { HELPDESK_PROVIDER: 'zendesk', ZENDESK_URL: 'https://acme.zendesk.com', ZENDESK_EMAIL: 'a@b.c' },
      'ZENDESK_API_TOKEN',
    ],
    [{ HELPDESK_PROVIDER: 'webhook', HELPDESK_WEBHOOK_SECRET: 's' }, 'HELPDESK_WEBHOOK_URL'],
    [{ HELPDESK_PROVIDER: 'email' }, 'HELPDESK_PROVIDER must be one of'],
    [{ HELPDESK_RETRY_BASE_MS: 'fast' }, 'HELPDESK_RETRY_BASE_MS must be an integer'],
    [{ HELPDESK_MAX_ATTEMPTS: '0' }, 'HELPDESK_MAX_ATTEMPTS must be an integer from 1'],
  ] as const) {
    it(`refuses to start: ${message}`, () => {
      expect(() => loadConfig(env)).to.throw(ConfigError, message);
    });
  }
});
