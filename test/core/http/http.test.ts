import { expect } from 'chai';
import { errorBody, get, post, request, startTestApi, type TestApi } from '../../helpers/api.js';
import { redis } from '../../helpers/redis.js';

describe('HTTP layer', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi({ CORS_ORIGINS: '*' });
  });
  after(() => api.stop());

  describe('request ids', () => {
    it('echoes a sane incoming X-Request-Id in the header, the error body and the log line', async () => {
      const res = await get(api.url, '/v1/sync/none', { 'X-Request-Id': 'abc-123.x:y' });
      expect(res.headers.get('x-request-id')).to.equal('abc-123.x:y');
      expect(res.body.error.requestId).to.equal('abc-123.x:y');
      const line = api.logs.find((l) => l.requestId === 'abc-123.x:y' && l.msg === 'request');
      expect(line).to.include({ method: 'GET', route: '/v1/sync/:id', status: 404 });
    });

    it('probes (/healthz, /readyz) log their line at debug, other requests at info', async () => {
      for (const path of ['/healthz', '/readyz', '/v1/services']) {
        expect(
          (await get(api.url, path, { 'X-Request-Id': `level${path.replaceAll('/', '.')}` })).status,
        ).to.equal(200);
      }
      const level = (path: string) =>
        api.logs.find((l) => l.requestId === `level${path.replaceAll('/', '.')}` && l.msg === 'request')
          ?.level;
      expect(['/healthz', '/readyz', '/v1/services'].map(level)).to.deep.equal(['debug', 'debug', 'info']);
    });

    it('replaces an insane one with a generated UUID', async () => {
      const res = await get(api.url, '/healthz', { 'X-Request-Id': 'bad id <script>' });
      expect(res.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    });
  });

  describe('routing errors as envelopes', () => {
    it('unknown route → 404 NOT_FOUND', async () => {
      const res = await get(api.url, '/v1/nope');
      expect(res.status).to.equal(404);
      expect(res.body).to.deep.equal(errorBody(res, 'NOT_FOUND', 'There is no such endpoint.'));
    });

    it('known path, wrong method → 405 with Allow', async () => {
      const res = await post(api.url, '/v1/sync/abc', {});
      expect(res.status).to.equal(405);
      expect(res.headers.get('allow')).to.equal('HEAD, GET');
      expect(res.body).to.deep.equal(
        errorBody(res, 'METHOD_NOT_ALLOWED', 'This endpoint does not accept that method.'),
      );
      const put = await request(api.url, '/v1/action', { method: 'PUT' });
      expect(put.status).to.equal(405);
      expect(put.headers.get('allow')).to.equal('POST');
    });

    it('no framework banner headers', async () => {
      const res = await get(api.url, '/healthz');
      expect(res.headers.get('x-powered-by')).to.equal(null);
      expect(res.headers.get('server')).to.equal(null);
    });
  });

  describe('health', () => {
    it('/healthz and /readyz answer without rate-limit headers', async () => {
      const live = await get(api.url, '/healthz');
      expect(live.body).to.deep.equal({ success: true, data: { status: 'ok' } });
      expect(live.headers.get('ratelimit-limit')).to.equal(null);
      const ready = await get(api.url, '/readyz');
      expect(ready.body).to.deep.equal({ success: true, data: { status: 'ready' } });
    });
  });

  describe('CORS', () => {
    it('any origin by default, with the rate-limit headers exposed', async () => {
      const res = await get(api.url, '/v1/services', { Origin: 'chrome-extension://abc' });
      expect(res.headers.get('access-control-allow-origin')).to.equal('*');
      expect(res.headers.get('access-control-expose-headers')).to.contain('RateLimit-Remaining');
    });

    it('a request without Origin gets no CORS headers, only Vary: Origin', async () => {
      const res = await get(api.url, '/v1/services');
      expect(res.status).to.equal(200);
      expect(res.headers.get('vary')).to.equal('Origin');
      expect(res.headers.get('access-control-allow-origin')).to.equal(null);
      expect(res.headers.get('access-control-expose-headers')).to.equal(null);
      const browser = await get(api.url, '/v1/services', { Origin: 'chrome-extension://abc' });
      expect(browser.headers.get('vary')).to.equal('Origin');
    });

    it('answers preflights', async () => {
      const res = await request(api.url, '/v1/action', {
        method: 'OPTIONS',
        headers: { Origin: 'https://wallet.example', 'Access-Control-Request-Method': 'POST' },
      });
      expect(res.status).to.equal(204);
      expect(res.headers.get('access-control-allow-methods')).to.contain('POST');
    });

    it('a preflight allows Authorization and If-None-Match, and the poll that follows exposes its ETag', async () => {
      const origin = 'chrome-extension://abc';
      await post(api.url, '/v1/action', {
        chain: 'btc',
        wkIdentity: 'corspair',
        action: 'tx',
        payload: '00',
        path: '0-0',
      });
      const preflight = await request(api.url, '/v1/action/corspair', {
        method: 'OPTIONS',
        headers: {
          Origin: origin,
          'Access-Control-Request-Method': 'GET',
          'Access-Control-Request-Headers': 'authorization,if-none-match',
        },
      });
      expect(preflight.status).to.equal(204);
      expect(preflight.headers.get('access-control-allow-origin')).to.equal('*');
      expect(preflight.headers.get('access-control-allow-methods')).to.equal('GET,HEAD,POST,OPTIONS');
      expect(preflight.headers.get('access-control-allow-headers')).to.equal(
        'Content-Type,X-Request-Id,sspwkid,Authorization,If-None-Match',
      );
      const poll = await get(api.url, '/v1/action/corspair', { Origin: origin });
      expect(poll.status).to.equal(200);
      expect(poll.headers.get('access-control-expose-headers')).to.equal(
        'X-Request-Id,RateLimit-Limit,RateLimit-Remaining,RateLimit-Reset,Retry-After,ETag',
      );
      const tag = poll.headers.get('etag')!;
      const again = await get(api.url, '/v1/action/corspair', { Origin: origin, 'If-None-Match': tag });
      expect(again.status).to.equal(304);
      expect(again.headers.get('access-control-allow-origin')).to.equal('*');
      expect(again.headers.get('access-control-expose-headers')).to.contain('ETag');
    });

    it('an allow-list admits only its origins', async () => {
      const listed = await startTestApi({ CORS_ORIGINS: 'https://a.example, https://b.example' });
      try {
        const ok = await get(listed.url, '/v1/services', { Origin: 'https://b.example' });
        expect(ok.headers.get('access-control-allow-origin')).to.equal('https://b.example');
        const other = await get(listed.url, '/v1/services', { Origin: 'https://evil.example' });
        expect(other.headers.get('access-control-allow-origin')).to.equal(null);
      } finally {
        await listed.stop();
      }
    });
  });

  describe('GET /v1/services', () => {
    it('serves the SERVICES configuration', async () => {
      const res = await get(api.url, '/v1/services');
      expect(res.body).to.deep.equal({ success: true, data: { onramp: true, offramp: true, swap: true } });
      const custom = await startTestApi({ SERVICES: '{"onramp":false,"swap":true,"staking":true}' });
      try {
        expect((await get(custom.url, '/v1/services')).body.data).to.deep.equal({
          onramp: false,
          swap: true,
          staking: true,
        });
      } finally {
        await custom.stop();
      }
    });
  });

  describe('rate limiting', () => {
    let limited: TestApi;
    before(async () => {
      limited = await startTestApi({ RATE_LIMIT_POINTS: '3', RATE_LIMIT_WINDOW_SECONDS: '30' });
    });
    after(() => limited.stop());

    it('draft-06 headers on every /v1 response, 429 with an integer Retry-After when spent', async () => {
      const seen: (string | null)[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await get(limited.url, '/v1/sync/none');
        expect(res.headers.get('ratelimit-limit')).to.equal('3');
        expect(Number(res.headers.get('ratelimit-reset'))).to.be.within(1, 30);
        seen.push(res.headers.get('ratelimit-remaining'));
      }
      expect(seen).to.deep.equal(['2', '1', '0']);
      const res = await get(limited.url, '/v1/sync/none');
      expect(res.status).to.equal(429);
      expect(res.body).to.deep.equal(
        errorBody(res, 'RATE_LIMITED', 'Too many requests; slow down and retry later.'),
      );
      expect(res.headers.get('retry-after')).to.match(/^\d+$/);
      expect(Number(res.headers.get('retry-after'))).to.be.within(1, 30);
      expect(res.headers.get('ratelimit-remaining')).to.equal('0');
      expect(await redis().keys('relay:rl:api:*')).to.deep.equal(['relay:rl:api:127.0.0.1']);
    });

    it('ignores X-Forwarded-For by default: a client cannot pick its own key', async () => {
      for (let i = 0; i < 3; i++) {
        await get(limited.url, '/v1/services', { 'X-Forwarded-For': `10.0.0.${i}` });
      }
      const res = await get(limited.url, '/v1/services', { 'X-Forwarded-For': '10.9.9.9' });
      expect(res.status).to.equal(429);
    });

    it('with TRUST_PROXY_HOPS=1 the last X-Forwarded-For entry is the client', async () => {
      const proxied = await startTestApi({ RATE_LIMIT_POINTS: '2', TRUST_PROXY_HOPS: '1' });
      try {
        const spoof = (first: string) => ({ 'X-Forwarded-For': `${first}, 198.51.100.7` });
        expect((await get(proxied.url, '/v1/services', spoof('1.1.1.1'))).status).to.equal(200);
        expect((await get(proxied.url, '/v1/services', spoof('2.2.2.2'))).status).to.equal(200);
        expect((await get(proxied.url, '/v1/services', spoof('3.3.3.3'))).status).to.equal(429);
        expect(await redis().exists('relay:rl:api:198.51.100.7')).to.equal(1);
        const other = await get(proxied.url, '/v1/services', { 'X-Forwarded-For': '203.0.113.5' });
        expect(other.status).to.equal(200);
      } finally {
        await proxied.stop();
      }
    });
  });

  describe('logs', () => {
    it('are JSON lines with the request id and never carry bodies', async () => {
      await post(api.url, '/v1/sync', {
        chain: 'btc',
        walletIdentity: 'w',
        keyXpub: 'xpubSECRETISH',
        wkIdentity: 'k',
      });
      expect(JSON.stringify(api.logs)).not.to.contain('xpubSECRETISH');
      for (const line of api.logs.filter((l) => l.msg === 'request')) {
        expect(line.requestId).to.be.a('string');
        expect(line.time).to.be.a('string');
      }
    });
  });
});

describe('server timeouts', () => {
  it('a request body that arrives too late is cut off and the process keeps serving', async () => {
    const { request } = await import('node:http');
    const api = await startTestApi({ HTTP_REQUEST_TIMEOUT_MS: '400' });
    try {
      const body = JSON.stringify({ chain: 'btc', wkIdentity: 'late', action: 'txid', payload: 'abcd' });
      const outcome = await new Promise<number | string>((resolve) => {
        const req = request(
          `${api.url}/v1/action`,
          { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': body.length } },
          (res) => {
            res.resume();
            resolve(res.statusCode!);
          },
        );
        req.on('error', () => resolve('closed'));
        req.write(body.slice(0, 10));
        setTimeout(() => req.end(body.slice(10)), 1500);
      });
      expect(outcome).to.be.oneOf([408, 'closed']);
      expect(await redis().exists('relay:action:late')).to.equal(0);
      expect((await get(api.url, '/healthz')).status).to.equal(200);
    } finally {
      await api.stop();
    }
  });
});
