import { expect } from 'chai';
import { API_PROFILES } from '../../src/core/config/config.js';
import { registry } from '../../src/core/metrics.js';
import { errorBody, get, post, request, startTestApi, type Reply, type TestApi } from '../helpers/api.js';
import { readBody } from '../helpers/profile.js';
import { parsePrometheus, valueOf } from '../helpers/prometheus.js';
import { commandsDuring, redis } from '../helpers/redis.js';

const PAIR = 'bc1qconditional';
const REQUEST = { chain: 'btc', wkIdentity: PAIR, action: 'tx', payload: '0200abff', path: '0-0' };
const READ = `/v1/action/${PAIR}`;

async function notModifiedCount(): Promise<number> {
  return valueOf(parsePrometheus(await registry.metrics()), 'relay_http_not_modified_total', {
    route: '/v1/action/:id',
  });
}

/** A 304 as the contract describes it: no body, the tag, and the headers every /v1 answer carries. */
function expectNotModified(res: Reply, tag: string): void {
  expect(res.status).to.equal(304);
  expect(res.text).to.equal('');
  expect(res.headers.get('etag')).to.equal(tag);
  expect(res.headers.get('cache-control')).to.equal('no-cache');
  expect(res.headers.get('x-request-id')).to.match(/^[A-Za-z0-9._:-]{1,128}$/);
  for (const name of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'])
    expect(res.headers.get(name), name).to.match(/^\d+$/);
  expect(res.headers.get('content-type')).to.equal(null);
}

for (const profile of API_PROFILES) {
  describe(`conditional GET /v1/action/{id} (ETag, If-None-Match), API_PROFILE=${profile}`, () => {
    let a: TestApi;
    let b: TestApi;
    before(async () => {
      [a, b] = await Promise.all([
        startTestApi({ API_PROFILE: profile }),
        startTestApi({ API_PROFILE: profile }),
      ]);
    });
    after(() => Promise.all([a.stop(), b.stop()]));

    /** POSTs the request through `api` and answers its record and the tag both pods give it. */
    async function store(api: TestApi): Promise<{ record: Record<string, unknown>; tag: string }> {
      const record = (await post(api.url, '/v1/action', REQUEST)).body.data;
      const [fromA, fromB] = await Promise.all([get(a.url, READ), get(b.url, READ)]);
      for (const res of [fromA, fromB]) {
        expect(res.status).to.equal(200);
        expect(res.body).to.deep.equal(readBody(profile, record));
        expect(res.headers.get('cache-control')).to.equal('no-cache');
      }
      const tag = fromA.headers.get('etag')!;
      expect(tag).to.match(/^"[\x21\x23-\x7e]+"$/);
      expect(fromB.headers.get('etag')).to.equal(tag);
      return { record, tag };
    }

    it('a 200 carries the same ETag on every pod for the same record, and another once a POST replaces it', async () => {
      const first = await store(a);
      expect((await get(a.url, READ)).headers.get('etag')).to.equal(first.tag);
      const second = await store(b);
      expect(second.record.id).to.not.equal(first.record.id);
      expect(second.tag).to.not.equal(first.tag);
    });

    it('If-None-Match naming the current tag: 304 with no body, its ETag, X-Request-Id and RateLimit-*, on any pod', async () => {
      const { tag } = await store(a);
      const before = await notModifiedCount();
      let res: Reply | undefined;
      const commands = await commandsDuring(async () => {
        res = await get(b.url, READ, { 'If-None-Match': tag, 'X-Request-Id': 'poll-304' });
      });
      expectNotModified(res!, tag);
      expect(res!.headers.get('x-request-id')).to.equal('poll-304');
      expect(await notModifiedCount()).to.equal(before + 1);
      // Still one script that consumes the limit and reads the mailbox.
      const relevant = commands.filter(
        (args) => args.includes('relay:rl:api:127.0.0.1') || args.includes(`relay:action:${PAIR}`),
      );
      expect(relevant).to.have.length(1);
      expect(relevant[0]![0]!.toLowerCase()).to.be.oneOf(['eval', 'evalsha']);
      expect(relevant[0]).to.include.members(['relay:rl:api:127.0.0.1', `relay:action:${PAIR}`]);
    });

    it('weak comparison, a member of a list, and * name the current tag; another or an old tag gets the record', async () => {
      const old = (await store(a)).tag;
      const { record, tag } = await store(a);
      for (const field of [
        `W/${tag}`,
        `"other", ${tag}`,
        ` ,, W/"x" ,${tag}, `,
        `${','.repeat(1000)}${tag}`,
        // Past the ids a read looks for (the others are tags of no record): compared all the same.
        `"a", "b", "c", "d", "e", "f", ${tag}`,
        `${tag.slice(0, -1)}.zz", W/${tag}`,
        '*',
        ' * ',
      ]) {
        expectNotModified(await get(a.url, READ, { 'If-None-Match': field }), tag);
      }
      // The record's id with another receipt time names another state of it.
      const otherReceipt = `${tag.slice(0, -1)}.zz"`;
      for (const field of ['"other"', old, `W/${old}`, `"x", ${old}`, 'W/""', '""', otherReceipt]) {
        const res = await get(a.url, READ, { 'If-None-Match': field });
        expect(res.status, field).to.equal(200);
        expect(res.body).to.deep.equal(readBody(profile, record));
        expect(res.headers.get('etag')).to.equal(tag);
      }
    });

    it('HEAD answers alike: the ETag without a body, 304 when If-None-Match names it', async () => {
      const { tag } = await store(a);
      const head = await request(a.url, READ, { method: 'HEAD' });
      expect(head.status).to.equal(200);
      expect(head.text).to.equal('');
      expect(head.headers.get('etag')).to.equal(tag);
      expectNotModified(
        await request(a.url, READ, { method: 'HEAD', headers: { 'If-None-Match': tag } }),
        tag,
      );
    });

    it('a malformed If-None-Match names nothing: 200 with the record, never a refusal', async () => {
      const { record, tag } = await store(a);
      const id = tag.slice(1, -1);
      for (const field of [
        id,
        `W/${id}`,
        `w/${tag}`,
        `${tag}x`,
        `${tag} ${tag}`,
        `${tag};`,
        `"${id}`,
        `*, ${tag}`,
        `${tag}, *`,
        '**',
        `"a"b", ${tag}`,
        `"a b", ${tag}`,
        `W/ ${tag}`,
        '',
      ]) {
        const res = await get(a.url, READ, { 'If-None-Match': field });
        expect(res.status, field).to.equal(200);
        expect(res.body).to.deep.equal(readBody(profile, record));
        expect(res.headers.get('etag')).to.equal(tag);
      }
    });

    it('an empty mailbox is 404 without an ETag, whatever If-None-Match says, * included', async () => {
      const before = await notModifiedCount();
      for (const field of ['*', '"abc"', 'W/"abc"', undefined]) {
        const res = await get(
          a.url,
          '/v1/action/nobody',
          field === undefined ? {} : { 'If-None-Match': field },
        );
        expect(res.status).to.equal(404);
        expect(res.body).to.deep.equal(errorBody(res, 'NOT_FOUND'));
        expect(res.headers.get('etag')).to.equal(null);
      }
      expect(await notModifiedCount()).to.equal(before);
    });

    it('a 304 counts against the rate limit as any read: the remaining points drop, and a spent budget is 429', async () => {
      const limited = await startTestApi({
        API_PROFILE: profile,
        RATE_LIMIT_POINTS: '4',
        RATE_LIMIT_WINDOW_SECONDS: '60',
      });
      try {
        const write = await post(limited.url, '/v1/action', REQUEST);
        expect(write.headers.get('ratelimit-remaining')).to.equal('3');
        const tag = (await get(limited.url, READ)).headers.get('etag')!;
        const remaining: (string | null)[] = [];
        for (let i = 0; i < 2; i++) {
          const res = await get(limited.url, READ, { 'If-None-Match': tag });
          expectNotModified(res, tag);
          remaining.push(res.headers.get('ratelimit-remaining'));
        }
        expect(remaining).to.deep.equal(['1', '0']);
        const refused = await get(limited.url, READ, { 'If-None-Match': tag });
        expect(refused.status).to.equal(429);
        expect(refused.body).to.deep.equal(errorBody(refused, 'RATE_LIMITED'));
        expect(refused.headers.get('retry-after')).to.match(/^\d+$/);
        expect(refused.headers.get('etag')).to.equal(null);
        expect(await redis().get('relay:rl:api:127.0.0.1')).to.equal('5');
      } finally {
        await limited.stop();
      }
    });

    it('a poll without If-None-Match (the released apps) is answered as before, plus ETag and Cache-Control', async () => {
      const { record, tag } = await store(a);
      const res = await get(a.url, READ);
      expect(res.text).to.equal(
        profile === 'ssp-apps' ? JSON.stringify(record) : JSON.stringify({ success: true, data: record }),
      );
      expect(res.text).to.equal(
        profile === 'ssp-apps'
          ? await redis().get(`relay:action:${PAIR}`)
          : `{"success":true,"data":${await redis().get(`relay:action:${PAIR}`)}}`,
      );
      expect([...res.headers.keys()].sort()).to.deep.equal([
        'cache-control',
        'connection',
        'content-length',
        'content-type',
        'date',
        'etag',
        'keep-alive',
        'ratelimit-limit',
        'ratelimit-remaining',
        'ratelimit-reset',
        'vary',
        'x-content-type-options',
        'x-request-id',
      ]);
      expect(res.headers.get('etag')).to.equal(tag);
    });
  });
}
