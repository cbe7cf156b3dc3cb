import { expect } from 'chai';
import { errorBody, post, startTestApi, type TestApi } from '../helpers/api.js';
import { redis, testRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';

const ticket = {
  subject: 'Cannot sign',
  description: 'The key app shows an error.\nSecond line.',
  type: 'Incident',
  email: 'ann@example.com',
};
const contact = { name: 'Ann Example', email: 'ann@example.com', message: 'Hello,\nplease call me.' };

const JOB_ID = /^(ticket|contact)-[0-9a-f]{64}$/;

/** The job's data as BullMQ stored it in its hash. */
async function jobData(id: string): Promise<unknown> {
  const data = await redis().hget(`relay:{bull:support}:support:${id}`, 'data');
  return data === null ? null : JSON.parse(data);
}

const waiting = () => redis().lrange('relay:{bull:support}:support:wait', 0, -1);

describe('POST /v1/ticket and POST /v1/contact (API side)', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi({ SUBMISSIONS_PER_DAY: '1000' });
  });
  after(() => api.stop());

  it('queues a ticket: answers its job id, and Redis holds the job with its retry and retention options', async () => {
    const res = await post(api.url, '/v1/ticket', { ...ticket, unknown: 'dropped' });
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ success: true, data: { id: res.body.data.id, status: 'queued' } });
    const { id } = res.body.data;
    expect(id)
      .to.match(JOB_ID)
      .and.satisfy((s: string) => s.startsWith('ticket-'));
    expect(await waiting()).to.deep.equal([id]);
    expect(await jobData(id)).to.deep.equal({ kind: 'ticket', ...ticket });
    const opts = JSON.parse((await redis().hget(`relay:{bull:support}:support:${id}`, 'opts'))!);
    expect(opts).to.deep.include({
      attempts: 12,
      backoff: { type: 'exponential', delay: 5000, jitter: 0.5 },
      removeOnComplete: { age: 86_400 },
      removeOnFail: { age: 604_800 },
    });
  });

  it('queues a contact message', async () => {
    const res = await post(api.url, '/v1/contact', contact);
    expect(res.status).to.equal(200);
    const { id } = res.body.data;
    expect(res.body).to.deep.equal({ success: true, data: { id, status: 'queued' } });
    expect(id)
      .to.match(JOB_ID)
      .and.satisfy((s: string) => s.startsWith('contact-'));
    expect(await jobData(id)).to.deep.equal({ kind: 'contact', ...contact });
  });

  it('files unknown ticket types as Question and passes the four known ones through', async () => {
    const other = await post(api.url, '/v1/ticket', { ...ticket, type: 'Bug report' });
    expect(await jobData(other.body.data.id)).to.deep.include({ type: 'Question' });
    for (const type of ['Question', 'Incident', 'Problem', 'Feature Request']) {
      const res = await post(api.url, '/v1/ticket', { ...ticket, type });
      expect(await jobData(res.body.data.id)).to.deep.include({ type });
    }
  });

  it('the same submission, however encoded, gets the same job id and makes one job', async () => {
    const first = await post(api.url, '/v1/ticket', ticket);
    const again = await post(api.url, '/v1/ticket', {
      ...ticket,
      subject: `  ${ticket.subject}\t`,
      description: ticket.description.replace('\n', '\r\n'),
      email: 'Ann@Example.COM',
    });
    expect(again.body).to.deep.equal(first.body);
    expect(await waiting()).to.deep.equal([first.body.data.id]);

    const different = await post(api.url, '/v1/ticket', { ...ticket, subject: 'Another subject' });
    expect(different.body.data.id).to.not.equal(first.body.data.id);
    const asContact = await post(api.url, '/v1/contact', contact);
    expect(asContact.body.data.id).to.not.equal(first.body.data.id);
    expect(await waiting()).to.have.length(3);
  });

  it('writes no form contents or emails to the log', async () => {
    await post(api.url, '/v1/ticket', ticket);
    await post(api.url, '/v1/contact', contact);
    const text = JSON.stringify(api.logs);
    for (const secret of ['ann@example.com', 'Cannot sign', 'key app shows', 'Ann Example', 'please call']) {
      expect(text).to.not.include(secret);
    }
    expect(api.logs.filter((line) => line.msg === 'support job queued')).to.have.length.at.least(2);
  });

  describe('bad input: 4xx, nothing queued, no submission counted', () => {
    const long = (n: number) => 'x'.repeat(n);
    const cases: [string, string, Record<string, unknown>, string][] = [
      ['/v1/ticket', 'missing subject', { ...ticket, subject: undefined }, '/body/subject'],
      ['/v1/ticket', 'missing description', { ...ticket, description: undefined }, '/body/description'],
      ['/v1/ticket', 'missing type', { ...ticket, type: undefined }, '/body/type'],
      ['/v1/ticket', 'missing email', { ...ticket, email: undefined }, '/body/email'],
      ['/v1/ticket', 'numeric subject', { ...ticket, subject: 5 }, '/body/subject'],
      ['/v1/ticket', 'empty subject', { ...ticket, subject: '' }, '/body/subject'],
      ['/v1/ticket', 'whitespace-only subject', { ...ticket, subject: ' \n\t ' }, '/body/subject'],
      ['/v1/ticket', 'subject over 1000', { ...ticket, subject: long(1001) }, '/body/subject'],
      ['/v1/ticket', 'array description', { ...ticket, description: ['a'] }, '/body/description'],
      ['/v1/ticket', 'empty description', { ...ticket, description: '' }, '/body/description'],
      ['/v1/ticket', 'description over 50000', { ...ticket, description: long(50_001) }, '/body/description'],
      ['/v1/ticket', 'null type', { ...ticket, type: null }, '/body/type'],
      ['/v1/ticket', 'empty type', { ...ticket, type: '' }, '/body/type'],
      ['/v1/ticket', 'type over 500', { ...ticket, type: long(501) }, '/body/type'],
      ['/v1/ticket', 'email without @', { ...ticket, email: 'ann.example.com' }, '/body/email'],
      ['/v1/ticket', 'email with a space', { ...ticket, email: 'ann @example.com' }, '/body/email'],
      ['/v1/ticket', 'numeric email', { ...ticket, email: 42 }, '/body/email'],
      ['/v1/ticket', 'email over 254', { ...ticket, email: `${long(64)}@${long(190)}.com` }, '/body/email'],
      ['/v1/contact', 'missing name', { ...contact, name: undefined }, '/body/name'],
      ['/v1/contact', 'missing email', { ...contact, email: undefined }, '/body/email'],
      ['/v1/contact', 'missing message', { ...contact, message: undefined }, '/body/message'],
      ['/v1/contact', 'empty name', { ...contact, name: '' }, '/body/name'],
      ['/v1/contact', 'name over 1000', { ...contact, name: long(1001) }, '/body/name'],
      ['/v1/contact', 'object name', { ...contact, name: { first: 'Ann' } }, '/body/name'],
      ['/v1/contact', 'malformed email', { ...contact, email: 'ann@' }, '/body/email'],
      ['/v1/contact', 'whitespace-only message', { ...contact, message: '   ' }, '/body/message'],
      ['/v1/contact', 'message over 50000', { ...contact, message: long(50_001) }, '/body/message'],
      ['/v1/contact', 'boolean message', { ...contact, message: true }, '/body/message'],
    ];

    const nothingWritten = async () => {
      expect(await redis().keys('*{bull:*')).to.deep.equal([]);
      expect(await redis().keys('relay:rl:submissions*')).to.deep.equal([]);
    };

    for (const [path, label, body, field] of cases) {
      it(`${path}: ${label} → 400 INVALID_PARAMETER at ${field}`, async () => {
        const res = await post(api.url, path, body);
        expect(res.status).to.equal(400);
        expect(res.body).to.deep.equal(
          errorBody(res, 'INVALID_PARAMETER', 'A field of the request body is invalid.'),
        );
        expect(res.body.error.details.map((d: { field: string }) => d.field)).to.include(field);
        await nothingWritten();
      });
    }

    it('accepts every field at its maximum length', async () => {
      const email = `${long(64)}@${long(185)}.com`;
      expect(email).to.have.length(254);
      const max = { subject: long(1000), description: long(50_000), type: long(500), email };
      expect((await post(api.url, '/v1/ticket', max)).status).to.equal(200);
      const maxContact = { name: long(1000), email, message: long(50_000) };
      expect((await post(api.url, '/v1/contact', maxContact)).status).to.equal(200);
    });

    it('measures lengths in characters: a 50,000-character description of 3-byte characters is accepted', async () => {
      const wide = { ...ticket, description: '€'.repeat(50_000) };
      expect(Buffer.byteLength(JSON.stringify(wide))).to.be.above(150_000);
      expect((await post(api.url, '/v1/ticket', wide)).status).to.equal(200);
    });

    it('counts a character outside the BMP (two UTF-16 units) once: 1,000 emoji fit a 1,000-character subject, 1,001 do not', async () => {
      const fits = { ...ticket, subject: '😀'.repeat(1000) };
      expect(fits.subject).to.have.length(2000);
      expect((await post(api.url, '/v1/ticket', fits)).status).to.equal(200);
      const over = await post(api.url, '/v1/ticket', { ...ticket, subject: `😀${'a'.repeat(1000)}` });
      expect(over.status).to.equal(400);
      expect(over.body.error.details).to.deep.equal([
        { field: '/body/subject', message: 'must NOT have more than 1000 characters' },
      ]);
      // A lone surrogate is a character of its own, as ajv counts it.
      const lone = await post(api.url, '/v1/contact', { ...contact, name: '\uD83D'.repeat(1001) });
      expect(lone.status).to.equal(400);
      expect(lone.body.error.details).to.deep.equal([
        { field: '/body/name', message: 'must NOT have more than 1000 characters' },
      ]);
    });

    for (const path of ['/v1/ticket', '/v1/contact']) {
      it(`${path}: broken JSON → 400 INVALID_JSON`, async () => {
        const res = await post(api.url, path, '{"subject":');
        expect(res.status).to.equal(400);
        expect(res.body).to.deep.equal(errorBody(res, 'INVALID_JSON', 'The request body is not valid JSON.'));
        await nothingWritten();
      });

      it(`${path}: a JSON array → 400 INVALID_JSON`, async () => {
        const res = await post(api.url, path, '[]');
        expect(res.status).to.equal(400);
        expect(res.body).to.deep.equal(
          errorBody(res, 'INVALID_JSON', 'The request body must be a JSON object.'),
        );
        await nothingWritten();
      });

      it(`${path}: wrong content type → 415`, async () => {
        const res = await post(api.url, path, JSON.stringify(ticket), { 'content-type': 'text/plain' });
        expect(res.status).to.equal(415);
        expect(res.body).to.deep.equal(
          errorBody(res, 'UNSUPPORTED_MEDIA_TYPE', 'The request body must be application/json.'),
        );
        await nothingWritten();
      });

      it(`${path}: a body over 256 KB → 413`, async () => {
        const res = await post(api.url, path, { ...ticket, ...contact, padding: long(257 * 1024) });
        expect(res.status).to.equal(413);
        expect(res.body.error.code).to.equal('PAYLOAD_TOO_LARGE');
        await nothingWritten();
      });
    }
  });
});

describe('support submissions: per-IP limit and Redis outages', () => {
  it('the per-IP submission limit is shared by two API instances, counts both forms, and leaves other IPs alone', async () => {
    const env = { SUBMISSIONS_PER_DAY: '3', TRUST_PROXY_HOPS: '1' };
    const [one, two] = await Promise.all([startTestApi(env), startTestApi(env)]);
    try {
      const from = (ip: string) => ({ 'x-forwarded-for': ip });
      expect((await post(one.url, '/v1/ticket', ticket, from('203.0.113.7'))).status).to.equal(200);
      expect((await post(two.url, '/v1/contact', contact, from('203.0.113.7'))).status).to.equal(200);
      expect(
        (await post(two.url, '/v1/ticket', { ...ticket, subject: 'Third' }, from('203.0.113.7'))).status,
      ).to.equal(200);
      const over = await post(one.url, '/v1/contact', { ...contact, name: 'Fourth' }, from('203.0.113.7'));
      expect(over.status).to.equal(429);
      expect(over.body).to.deep.equal(
        errorBody(over, 'RATE_LIMITED', 'Too many submissions from this address; retry later.'),
      );
      expect(Number(over.headers.get('retry-after'))).to.be.within(86_390, 86_400);
      expect(await redis().llen('relay:{bull:support}:support:wait')).to.equal(3);
      expect(await redis().get('relay:rl:submissions:203.0.113.7')).to.equal('4');
      expect(await redis().ttl('relay:rl:submissions:203.0.113.7')).to.be.within(86_390, 86_400);

      expect((await post(two.url, '/v1/contact', contact, from('198.51.100.9'))).status).to.equal(200);
    } finally {
      await Promise.all([one.stop(), two.stop()]);
    }
  });

  it("a repeated submission, even several at once, does not use up one of the day's submissions", async () => {
    const api = await startTestApi({ SUBMISSIONS_PER_DAY: '2' });
    try {
      const first = await post(api.url, '/v1/ticket', ticket);
      expect(first.status).to.equal(200);
      const repeats = await Promise.all([
        post(api.url, '/v1/ticket', ticket),
        ...Array.from({ length: 4 }, () => post(api.url, '/v1/contact', contact)),
      ]);
      expect(repeats.map((r) => r.status)).to.deep.equal([200, 200, 200, 200, 200]);
      expect(repeats[0]!.body).to.deep.equal(first.body);
      const contactIds = new Set(repeats.slice(1).map((r) => r.body.data.id));
      expect(contactIds.size).to.equal(1);
      expect(await redis().get('relay:rl:submissions:127.0.0.1')).to.equal('2');
      expect((await post(api.url, '/v1/ticket', ticket)).status).to.equal(200);
      const third = await post(api.url, '/v1/ticket', { ...ticket, subject: 'Another' });
      expect(third.status).to.equal(429);
      expect(await redis().llen('relay:{bull:support}:support:wait')).to.equal(2);
      // The refused form was not counted as seen: on another day it is a first submission.
      expect(await redis().keys('relay:support:counted:*')).to.have.length(2);
    } finally {
      await api.stop();
    }
  });

  it('Redis down at submission → 503 with Retry-After, never "queued"; once Redis is back submissions queue again', async () => {
    const api = await startTestApi();
    try {
      await testRedis().stop();
      for (const [path, body] of [
        ['/v1/ticket', ticket],
        ['/v1/contact', contact],
      ] as const) {
        const res = await post(api.url, path, body);
        expect(res.status).to.equal(503);
        expect(res.body).to.deep.equal(
          errorBody(res, 'UNAVAILABLE', 'The relay cannot reach its data store; retry shortly.'),
        );
        expect(res.headers.get('retry-after')).to.equal('1');
      }
      await testRedis().start();
      await redis().ping();
      // Nothing but the pod's liveness, which it renews once Redis answers again.
      expect((await redis().keys('*')).filter((key) => !key.startsWith('relay:pod:'))).to.deep.equal([]);
      // The producer's client reconnects within a second; until then the answer stays 503.
      const back = await waitFor('a queued submission', async () => {
        const res = await post(api.url, '/v1/ticket', ticket);
        return res.status === 200 ? res : (expect(res.status).to.equal(503), undefined);
      });
      expect(await waiting()).to.deep.equal([back.body.data.id]);
    } finally {
      await testRedis().start();
      await api.stop();
    }
  });
});
