import { expect } from 'chai';
import { errorBody, get, post, startTestApi, type TestApi } from '../helpers/api.js';
import { commandsDuring, redis } from '../helpers/redis.js';
import { itRejectsBodies, type InvalidCase } from '../helpers/rejects.js';

const XPUB =
  'xpub6CUGRUonZSQ4TWtTMmzXdrXDtypWKiKrhko4egpiMZbpiaQL2jkwSB1icqYh2cfDfVxdx4df189oLKnC5fSwqPfgyP3hooxujYzAu3fDVmz';
const record = {
  chain: 'btc',
  walletIdentity: 'wallet-1',
  keyXpub: XPUB,
  wkIdentity: 'bc1qwk',
};

describe('POST /v1/sync and GET /v1/sync/{id}', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi({ SYNC_TTL_SECONDS: '900', SYNC_READ_GRACE_SECONDS: '120' });
  });
  after(() => api.stop());

  it('stores the record with its TTL and returns exactly the given fields', async () => {
    const full = { ...record, generatedAddress: 'bitcoincash:pq123', publicNonces: ['02ab', 'x+/=.-_:'] };
    const res = await post(api.url, '/v1/sync', { ...full, unknownField: 'dropped' });
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ success: true, data: full });
    expect(JSON.parse((await redis().get('relay:sync:wallet-1'))!)).to.deep.equal(full);
    const ttl = await redis().ttl('relay:sync:wallet-1');
    expect(ttl).to.be.within(895, 900);
  });

  it('the key app’s six sync fields round-trip byte for byte (POST, Redis, GET)', async () => {
    const full = {
      ...record,
      walletXpub: XPUB,
      keyIdentity: '1BoatSLRHtKNngkdXEeobR76b53LETtpyT',
      redeemScript: '5221' + 'ab'.repeat(33) + '21' + 'cd'.repeat(33) + '52ae',
      witnessScript: '0020' + 'ef'.repeat(32),
      recoveryXpub: 'Zpub' + 'x'.repeat(107),
      xpubSignature:
        'H9L5yLFjti0QTHhPyFrZCT1V/MMnBtXKmoiKDZ78NDBjERki6ZTQZdSMCtkgoNmp17By9ItJr8o7ChX0XxY91nk=',
    };
    // Sent in another order: stored in the documented one.
    const shuffled = Object.fromEntries(Object.entries(full).reverse());
    const res = await post(api.url, '/v1/sync', shuffled);
    expect(res.status).to.equal(200);
    expect(res.text).to.equal(JSON.stringify({ success: true, data: full }));
    expect(await redis().get('relay:sync:wallet-1')).to.equal(JSON.stringify(full));
    const read = await get(api.url, '/v1/sync/wallet-1');
    expect(read.text).to.equal(JSON.stringify({ success: true, data: full }));
  });

  it('a new POST replaces the whole record, leaving no stale optional fields', async () => {
    await post(api.url, '/v1/sync', { ...record, generatedAddress: 'addr1', publicNonces: ['aa'] });
    const res = await post(api.url, '/v1/sync', { ...record, chain: 'ltc' });
    expect(res.body.data).to.deep.equal({ ...record, chain: 'ltc' });
    const read = await get(api.url, '/v1/sync/wallet-1');
    expect(read.body).to.deep.equal({ success: true, data: { ...record, chain: 'ltc' } });
  });

  it('the first read cuts the lifetime to the grace period; later reads still work and never lengthen it', async () => {
    await post(api.url, '/v1/sync', record);
    const first = await get(api.url, '/v1/sync/wallet-1');
    expect(first.status).to.equal(200);
    expect(first.body).to.deep.equal({ success: true, data: record });
    expect(await redis().ttl('relay:sync:wallet-1')).to.be.within(115, 120);

    await redis().expire('relay:sync:wallet-1', 30);
    const second = await get(api.url, '/v1/sync/wallet-1');
    expect(second.body.data).to.deep.equal(record);
    expect(await redis().ttl('relay:sync:wallet-1')).to.be.within(25, 30);
  });

  it('404 with the error envelope when there is no record', async () => {
    const res = await get(api.url, '/v1/sync/nobody');
    expect(res.status).to.equal(404);
    expect(res.body).to.deep.equal(
      errorBody(res, 'NOT_FOUND', 'No synchronization record for this wallet identity.'),
    );
  });

  it('404 once the record expired', async () => {
    await post(api.url, '/v1/sync', record);
    await redis().pexpire('relay:sync:wallet-1', 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await get(api.url, '/v1/sync/wallet-1')).status).to.equal(404);
  });

  it('SYNC_READ_GRACE_SECONDS=0 deletes the record on first read', async () => {
    const once = await startTestApi({ SYNC_READ_GRACE_SECONDS: '0' });
    try {
      await post(once.url, '/v1/sync', record);
      expect((await get(once.url, '/v1/sync/wallet-1')).body.data).to.deep.equal(record);
      expect(await redis().exists('relay:sync:wallet-1')).to.equal(0);
      expect((await get(once.url, '/v1/sync/wallet-1')).status).to.equal(404);
    } finally {
      await once.stop();
    }
  });

  describe('path parameter validation (after URL decoding)', () => {
    for (const [label, id] of [
      ['encoded slash', 'a%2Fb'],
      ['space', 'a%20b'],
      ['dot', 'a.b'],
      ['non-ASCII', '%C3%A9t%C3%A9'],
      ['over 200 characters', 'a'.repeat(201)],
      ['broken percent-encoding', 'a%ZZ'],
    ]) {
      it(`400 INVALID_PARAMETER for ${label}`, async () => {
        const res = await get(api.url, `/v1/sync/${id}`);
        expect(res.status).to.equal(400);
        expect(res.body.error.code).to.equal('INVALID_PARAMETER');
        expect(res.body.error.requestId).to.equal(res.headers.get('x-request-id'));
      });
    }

    it('accepts 200 characters of the allowed alphabet', async () => {
      const id = 'A0_:-'.repeat(40);
      await post(api.url, '/v1/sync', { ...record, walletIdentity: id });
      expect((await get(api.url, `/v1/sync/${id}`)).status).to.equal(200);
    });
  });

  describe('body validation: 400 and nothing written', () => {
    const cases: InvalidCase[] = [
      ['missing chain', { ...record, chain: undefined }, '/body/chain'],
      ['missing walletIdentity', { ...record, walletIdentity: undefined }, '/body/walletIdentity'],
      ['missing keyXpub', { ...record, keyXpub: undefined }, '/body/keyXpub'],
      ['missing wkIdentity', { ...record, wkIdentity: undefined }, '/body/wkIdentity'],
      ['numeric chain', { ...record, chain: 5 }, '/body/chain'],
      ['null keyXpub', { ...record, keyXpub: null }, '/body/keyXpub'],
      ['empty chain', { ...record, chain: '' }, '/body/chain'],
      ['over-long keyXpub', { ...record, keyXpub: 'x'.repeat(201) }, '/body/keyXpub'],
      ['slash in walletIdentity', { ...record, walletIdentity: 'a/b' }, '/body/walletIdentity'],
      ['non-ASCII wkIdentity', { ...record, wkIdentity: 'wk\u00e9' }, '/body/wkIdentity'],
      ['generatedAddress with a dot', { ...record, generatedAddress: 'a.b' }, '/body/generatedAddress'],
      ['publicNonces not an array', { ...record, publicNonces: 'aa' }, '/body/publicNonces'],
      ['an empty nonce', { ...record, publicNonces: [''] }, '/body/publicNonces/0'],
      ['a nonce with a space', { ...record, publicNonces: ['a b'] }, '/body/publicNonces/0'],
      ['a nonce over 500 chars', { ...record, publicNonces: ['a'.repeat(501)] }, '/body/publicNonces/0'],
      ['1001 nonces', { ...record, publicNonces: Array(1001).fill('aa') }, '/body/publicNonces'],
      ['walletXpub with a slash', { ...record, walletXpub: 'xpub/1' }, '/body/walletXpub'],
      ['numeric keyIdentity', { ...record, keyIdentity: 1 }, '/body/keyIdentity'],
      ['uppercase redeemScript', { ...record, redeemScript: 'AB' }, '/body/redeemScript'],
      ['odd-length witnessScript', { ...record, witnessScript: 'abc' }, '/body/witnessScript'],
      ['witnessScript over 20,000', { ...record, witnessScript: 'ab'.repeat(10_001) }, '/body/witnessScript'],
      ['recoveryXpub over 200', { ...record, recoveryXpub: 'x'.repeat(201) }, '/body/recoveryXpub'],
      ['xpubSignature not base64', { ...record, xpubSignature: 'not base64!' }, '/body/xpubSignature'],
      ['xpubSignature over 200', { ...record, xpubSignature: 'A'.repeat(201) }, '/body/xpubSignature'],
    ];
    itRejectsBodies(() => api, '/v1/sync', cases, 'relay:sync:*');

    it('broken JSON → 400 INVALID_JSON', async () => {
      const res = await post(api.url, '/v1/sync', '{"chain":');
      expect(res.status).to.equal(400);
      expect(res.body).to.deep.equal(errorBody(res, 'INVALID_JSON', 'The request body is not valid JSON.'));
    });

    for (const [label, raw] of [
      ['an array', '[1,2]'],
      ['a string', '"text"'],
      ['null', 'null'],
      ['a number', '5'],
    ]) {
      it(`a body that is ${label} → 400 INVALID_JSON`, async () => {
        const res = await post(api.url, '/v1/sync', raw);
        expect(res.status).to.equal(400);
        expect(res.body.error.code).to.equal('INVALID_JSON');
      });
    }

    it('wrong content type → 415', async () => {
      const res = await post(api.url, '/v1/sync', JSON.stringify(record), { 'content-type': 'text/plain' });
      expect(res.status).to.equal(415);
      expect(res.body).to.deep.equal(
        errorBody(res, 'UNSUPPORTED_MEDIA_TYPE', 'The request body must be application/json.'),
      );
      expect(await redis().keys('relay:sync:*')).to.deep.equal([]);
    });

    it('the largest valid record fits the 640 KB limit; a valid-JSON body breaking a field rule is 400, not 413', async () => {
      const nonce = (i: number) => i.toString(16).padStart(500, 'a');
      const largest = { ...record, publicNonces: Array.from({ length: 1000 }, (_, i) => nonce(i)) };
      const ok = await post(api.url, '/v1/sync', largest);
      expect(ok.status).to.equal(200);
      expect(JSON.parse((await redis().get('relay:sync:wallet-1'))!)).to.deep.equal(largest);
      await redis().del('relay:sync:wallet-1');
      const tooMany = await post(api.url, '/v1/sync', {
        ...record,
        publicNonces: Array.from({ length: 1001 }, (_, i) => nonce(i)),
      });
      expect(tooMany.status).to.equal(400);
      expect(tooMany.body.error.details).to.deep.equal([
        { field: '/body/publicNonces', message: 'must NOT have more than 1000 items' },
      ]);
      expect(await redis().keys('relay:sync:*')).to.deep.equal([]);
    });

    it('a body over 640 KB → 413', async () => {
      const res = await post(api.url, '/v1/sync', { ...record, padding: 'x'.repeat(640 * 1024) });
      expect(res.status).to.equal(413);
      expect(res.body.error.code).to.equal('PAYLOAD_TOO_LARGE');
      expect(await redis().keys('relay:sync:*')).to.deep.equal([]);
    });

    it('__proto__ is refused and constructor is dropped: nothing reaches a prototype', async () => {
      const polluted = await post(
        api.url,
        '/v1/sync',
        `{"__proto__":{"polluted":1},${JSON.stringify(record).slice(1)}`,
      );
      expect(polluted.status).to.equal(400);
      expect(polluted.body.error.code).to.equal('INVALID_JSON');
      const res = await post(api.url, '/v1/sync', { ...record, constructor: { prototype: { polluted: 1 } } });
      expect(res.status).to.equal(200);
      expect(res.body.data).to.deep.equal(record);
      expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
      expect(JSON.parse((await redis().get('relay:sync:wallet-1'))!)).to.deep.equal(record);
    });
  });

  describe('the global rate limit and the read in one Redis round trip', () => {
    it('a GET is one script that consumes the limit and reads the record', async () => {
      await post(api.url, '/v1/sync', record);
      let res: Awaited<ReturnType<typeof get>> | undefined;
      const commands = await commandsDuring(async () => {
        res = await get(api.url, '/v1/sync/wallet-1');
      });
      expect(res!.status).to.equal(200);
      expect(res!.body).to.deep.equal({ success: true, data: record });
      expect(res!.headers.get('ratelimit-limit')).to.equal('100000');
      const both = commands.filter(
        (args) => args.includes('relay:rl:api:127.0.0.1') || args.includes('relay:sync:wallet-1'),
      );
      expect(both).to.have.length(1);
      expect(both[0]).to.include.members(['relay:rl:api:127.0.0.1', 'relay:sync:wallet-1']);
      expect(both[0]![0]!.toLowerCase()).to.be.oneOf(['eval', 'evalsha']);
      expect(await redis().ttl('relay:sync:wallet-1')).to.be.within(115, 120);
    });

    describe('with the budget spent', () => {
      let limited: TestApi;
      before(async () => {
        limited = await startTestApi({ RATE_LIMIT_POINTS: '2', SYNC_READ_GRACE_SECONDS: '120' });
      });
      after(() => limited.stop());
      beforeEach(() => redis().del('relay:rl:api:127.0.0.1'));

      it('a refused GET changes nothing: 429 with the headers, the record keeps its lifetime', async () => {
        await post(limited.url, '/v1/sync', record);
        const first = await get(limited.url, '/v1/sync/nobody');
        expect(first.status).to.equal(404);
        expect(first.headers.get('ratelimit-remaining')).to.equal('0');
        const refused = await get(limited.url, '/v1/sync/wallet-1');
        expect(refused.status).to.equal(429);
        expect(refused.body).to.deep.equal(
          errorBody(refused, 'RATE_LIMITED', 'Too many requests; slow down and retry later.'),
        );
        expect(refused.headers.get('ratelimit-limit')).to.equal('2');
        expect(refused.headers.get('ratelimit-remaining')).to.equal('0');
        expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 30);
        expect(Number(refused.headers.get('ratelimit-reset'))).to.be.within(1, 30);
        expect(await redis().ttl('relay:sync:wallet-1')).to.be.within(890, 900);
        expect(await redis().get('relay:rl:api:127.0.0.1')).to.equal('3');
      });

      it('SYNC_READ_GRACE_SECONDS=0: a refused GET does not delete the record', async () => {
        const once = await startTestApi({ RATE_LIMIT_POINTS: '1', SYNC_READ_GRACE_SECONDS: '0' });
        try {
          await post(once.url, '/v1/sync', record);
          expect((await get(once.url, '/v1/sync/wallet-1')).status).to.equal(429);
          expect(await redis().exists('relay:sync:wallet-1')).to.equal(1);
          await redis().del('relay:rl:api:127.0.0.1');
          expect((await get(once.url, '/v1/sync/wallet-1')).body.data).to.deep.equal(record);
          expect(await redis().exists('relay:sync:wallet-1')).to.equal(0);
        } finally {
          await once.stop();
        }
      });

      it('a bad identity is still counted: 400 with the headers, then 429 once the budget is spent', async () => {
        const bad = await get(limited.url, '/v1/sync/a.b');
        expect(bad.status).to.equal(400);
        expect(bad.headers.get('ratelimit-remaining')).to.equal('1');
        await get(limited.url, '/v1/sync/a.b');
        const refused = await get(limited.url, '/v1/sync/a.b');
        expect(refused.status).to.equal(429);
        expect(refused.body.error.code).to.equal('RATE_LIMITED');
        expect(refused.headers.get('retry-after')).to.match(/^\d+$/);
      });
    });
  });
});
