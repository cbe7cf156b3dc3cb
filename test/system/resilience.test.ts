import { expect } from 'chai';
import { get, post, startTestApi, type TestApi } from '../helpers/api.js';
import { redis, testRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';

const record = { chain: 'btc', walletIdentity: 'w1', keyXpub: 'xpub1', wkIdentity: 'k1' };

describe('two API instances on one Redis', () => {
  let a: TestApi;
  let b: TestApi;
  before(async () => {
    a = await startTestApi({ RATE_LIMIT_POINTS: '4' });
    b = await startTestApi({ RATE_LIMIT_POINTS: '4' });
  });
  after(async () => {
    await a.stop();
    await b.stop();
  });

  it('a record written through one is read through the other, with the read grace applied once', async () => {
    expect((await post(a.url, '/v1/sync', record)).status).to.equal(200);
    expect((await get(b.url, '/v1/sync/w1')).body).to.deep.equal({ success: true, data: record });
    expect(await redis().ttl('relay:sync:w1')).to.be.within(115, 120);
    expect((await get(a.url, '/v1/sync/w1')).status).to.equal(200);
  });

  it('share one rate-limit budget, and spoofed X-Forwarded-For does not help', async () => {
    expect((await get(a.url, '/v1/services')).headers.get('ratelimit-remaining')).to.equal('3');
    expect(
      (await get(b.url, '/v1/services', { 'X-Forwarded-For': '1.2.3.4' })).headers.get('ratelimit-remaining'),
    ).to.equal('2');
    expect((await get(a.url, '/v1/services')).headers.get('ratelimit-remaining')).to.equal('1');
    expect((await get(b.url, '/v1/services', { 'X-Forwarded-For': '5.6.7.8' })).status).to.equal(200);
    expect((await get(a.url, '/v1/services', { 'X-Forwarded-For': '9.9.9.9' })).status).to.equal(429);
    expect((await get(b.url, '/v1/services')).status).to.equal(429);
  });
});

describe('Redis outage', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi({ RATE_LIMIT_POINTS: '1000' });
  });
  after(async () => {
    await testRedis().start(); // a no-op when the test already restarted it
    await api.stop();
  });

  it('answers 503 quickly while Redis is down, never a 200 for an unsaved write, then recovers by itself', async () => {
    await post(api.url, '/v1/sync', record);
    await testRedis().stop();

    const started = Date.now();
    const write = await post(api.url, '/v1/action', {
      chain: 'btc',
      wkIdentity: 'k1',
      action: 'txid',
      payload: 'aa',
    });
    const read = await get(api.url, '/v1/sync/w1');
    const token = await post(api.url, '/v1/token', { wkIdentity: 'k1', keyToken: 't' });
    const ready = await get(api.url, '/readyz');
    expect(Date.now() - started).to.be.below(8000); // four requests, each well under 2 s
    for (const res of [write, read, token]) {
      expect(res.status).to.equal(503);
      expect(res.body.error.code).to.equal('UNAVAILABLE');
      expect(res.headers.get('retry-after')).to.equal('1');
      // the in-memory insurance limiter keeps the headers coming
      expect(res.headers.get('ratelimit-limit')).to.equal('1000');
    }
    expect(ready.status).to.equal(503);
    expect((await get(api.url, '/healthz')).status).to.equal(200);

    await testRedis().start();
    await waitFor(
      'the relay to save again',
      async () => (await post(api.url, '/v1/sync', record)).status === 200,
    );
    expect((await get(api.url, '/v1/sync/w1')).body.data).to.deep.equal(record);
    expect((await get(api.url, '/readyz')).status).to.equal(200);
    // scripts were flushed with the restart: EVALSHA falls back to EVAL by itself
    expect(await redis().ttl('relay:sync:w1')).to.be.within(1, 120);
  });

  it('each request fails within 2 s', async () => {
    await testRedis().stop();
    try {
      for (const path of ['/v1/sync/w1', '/v1/action/k1']) {
        const started = Date.now();
        const res = await get(api.url, path);
        expect(res.status).to.equal(503);
        expect(Date.now() - started, path).to.be.below(2000);
      }
    } finally {
      await testRedis().start();
    }
  });
});
