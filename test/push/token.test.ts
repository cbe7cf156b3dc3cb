import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { get, post, startTestApi, type TestApi } from '../helpers/api.js';
import { redis } from '../helpers/redis.js';
import { itRejectsBodies, type InvalidCase } from '../helpers/rejects.js';

const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');
const SIX_MONTHS = 180 * 24 * 3600;

describe('POST /v1/token', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi({ TOKEN_REGISTRATIONS_PER_HOUR: '1000' });
  });
  after(() => api.stop());

  it('registers a key token and answers counts only, never the token', async () => {
    const res = await post(api.url, '/v1/token', { wkIdentity: 'pairA', keyToken: 'fcm-token-1' });
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({
      success: true,
      data: { wkIdentity: 'pairA', keyTokens: 1, walletTokens: 0 },
    });
    expect(res.text).not.to.contain('fcm-token-1');
    expect(await redis().zrange('relay:tokens:key:{pairA}', 0, -1)).to.deep.equal(['fcm-token-1']);
    expect(await redis().get(`relay:tokens:owner:key:${sha1('fcm-token-1')}`)).to.equal('pairA');
    expect(await redis().ttl('relay:tokens:key:{pairA}')).to.be.within(SIX_MONTHS - 5, SIX_MONTHS);
    expect(await redis().ttl(`relay:tokens:owner:key:${sha1('fcm-token-1')}`)).to.be.within(
      SIX_MONTHS - 5,
      SIX_MONTHS,
    );
  });

  it('registers both sides at once; re-registering the same token does not duplicate it', async () => {
    await post(api.url, '/v1/token', { wkIdentity: 'pairA', keyToken: 'k1', walletToken: 'w1' });
    const res = await post(api.url, '/v1/token', { wkIdentity: 'pairA', keyToken: 'k1', walletToken: 'w1' });
    expect(res.body.data).to.deep.equal({ wkIdentity: 'pairA', keyTokens: 1, walletTokens: 1 });
    expect(await redis().zrange('relay:tokens:wallet:{pairA}', 0, -1)).to.deep.equal(['w1']);
  });

  it('a token registered under another identity moves there', async () => {
    await post(api.url, '/v1/token', { wkIdentity: 'pairA', keyToken: 'shared' });
    const res = await post(api.url, '/v1/token', { wkIdentity: 'pairB', keyToken: 'shared' });
    expect(res.body.data).to.deep.equal({ wkIdentity: 'pairB', keyTokens: 1, walletTokens: 0 });
    expect(await redis().exists('relay:tokens:key:{pairA}')).to.equal(0);
    expect(await redis().zrange('relay:tokens:key:{pairB}', 0, -1)).to.deep.equal(['shared']);
    expect(await redis().get(`relay:tokens:owner:key:${sha1('shared')}`)).to.equal('pairB');
    const back = await post(api.url, '/v1/token', { wkIdentity: 'pairA', walletToken: 'other' });
    expect(back.body.data).to.deep.equal({ wkIdentity: 'pairA', keyTokens: 0, walletTokens: 1 });
  });

  it('keeps at most 100 tokens per side, dropping the oldest and its owner entry', async () => {
    for (let i = 0; i < 101; i++) {
      const res = await post(api.url, '/v1/token', { wkIdentity: 'busy', keyToken: `t${i}` });
      expect(res.body.data.keyTokens).to.equal(Math.min(i + 1, 100));
      if (i === 0) await new Promise((resolve) => setTimeout(resolve, 5)); // t0 is strictly the oldest
    }
    const tokens = await redis().zrange('relay:tokens:key:{busy}', 0, -1);
    expect(tokens).to.have.length(100);
    expect(tokens).not.to.include('t0');
    expect(await redis().exists(`relay:tokens:owner:key:${sha1('t0')}`)).to.equal(0);
    expect(await redis().get(`relay:tokens:owner:key:${sha1('t100')}`)).to.equal('busy');
  });

  it('registrations older than 180 days no longer count', async () => {
    await redis().zadd('relay:tokens:wallet:{old}', Date.now() - (SIX_MONTHS + 60) * 1000, 'stale');
    const res = await post(api.url, '/v1/token', { wkIdentity: 'old', walletToken: 'fresh' });
    expect(res.body.data).to.deep.equal({ wkIdentity: 'old', keyTokens: 0, walletTokens: 1 });
    expect(await redis().zrange('relay:tokens:wallet:{old}', 0, -1)).to.deep.equal(['fresh']);
  });

  it('tokens are not readable through the API', async () => {
    await post(api.url, '/v1/token', { wkIdentity: 'pairA', keyToken: 'secret-token' });
    const res = await get(api.url, '/v1/token');
    expect(res.status).to.equal(405);
    expect(res.headers.get('allow')).to.equal('POST');
    expect(res.text).not.to.contain('secret-token');
  });

  it('never logs the token', async () => {
    await post(api.url, '/v1/token', { wkIdentity: 'pairA', keyToken: 'do-not-log-me' });
    expect(JSON.stringify(api.logs)).not.to.contain('do-not-log-me');
  });

  describe('validation: 400, nothing written', () => {
    const cases: InvalidCase[] = [
      ['no token at all', { wkIdentity: 'p' }, '/body'],
      ['missing wkIdentity', { keyToken: 't' }, '/body/wkIdentity'],
      ['empty keyToken', { wkIdentity: 'p', keyToken: '' }, '/body/keyToken'],
      [
        'walletToken over 5000 chars',
        { wkIdentity: 'p', walletToken: 'x'.repeat(5001) },
        '/body/walletToken',
      ],
      ['numeric keyToken', { wkIdentity: 'p', keyToken: 5 }, '/body/keyToken'],
      ['null walletToken', { wkIdentity: 'p', walletToken: null }, '/body/walletToken'],
      ['wkIdentity with a space', { wkIdentity: 'p q', keyToken: 't' }, '/body/wkIdentity'],
    ];
    itRejectsBodies(() => api, '/v1/token', cases, 'relay:tokens:*');

    it('a valid token beside an invalid one writes neither', async () => {
      const res = await post(api.url, '/v1/token', { wkIdentity: 'p', keyToken: 'good', walletToken: '' });
      expect(res.status).to.equal(400);
      expect(await redis().keys('relay:tokens:*')).to.deep.equal([]);
    });

    it('broken JSON, an array body, wrong content type and oversize bodies', async () => {
      expect((await post(api.url, '/v1/token', '{')).body.error.code).to.equal('INVALID_JSON');
      expect((await post(api.url, '/v1/token', '["p"]')).body.error.code).to.equal('INVALID_JSON');
      expect((await post(api.url, '/v1/token', '{}', { 'content-type': 'text/json' })).status).to.equal(415);
      const big = await post(api.url, '/v1/token', {
        wkIdentity: 'p',
        keyToken: 't',
        pad: 'x'.repeat(65 * 1024),
      });
      expect(big.status).to.equal(413);
      expect(await redis().keys('relay:tokens:*')).to.deep.equal([]);
    });
  });
});
