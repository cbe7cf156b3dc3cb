import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { errorBody, post, startTestApi, type TestApi } from '../helpers/api.js';
import { redis } from '../helpers/redis.js';

const SECRET = 'test-onramper-secret-0123456789';
const hmac = (data: string) => createHmac('sha256', SECRET).update(data, 'utf8').digest('hex');

describe('POST /v1/sign/{partner}', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi({ ONRAMPER_SECRET: SECRET, SIGN_PER_MINUTE: '1000' });
  });
  after(() => api.stop());

  it('signs the parameters in the order given with HMAC-SHA256 hex', async () => {
    const body = {
      networkWallets: 'ETHEREUM:0xabc,BITCOIN:bc1q',
      wallets:
        'btc:bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh,eth:0x71C7656EC7ab88b098defB751B7401B5f6d8976F',
      walletAddressTags: 'xrp:123',
    };
    const res = await post(api.url, '/v1/sign/onramper', body);
    const signedData =
      'networkWallets=ETHEREUM:0xabc,BITCOIN:bc1q' +
      '&wallets=btc:bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh,eth:0x71C7656EC7ab88b098defB751B7401B5f6d8976F' +
      '&walletAddressTags=xrp:123';
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ success: true, data: { signature: hmac(signedData), signedData } });
  });

  it('signs a single parameter, including non-ASCII text as UTF-8', async () => {
    const res = await post(api.url, '/v1/sign/onramper', { wallets: 'btc:ünïcode' });
    expect(res.body.data).to.deep.equal({
      signature: hmac('wallets=btc:ünïcode'),
      signedData: 'wallets=btc:ünïcode',
    });
  });

  it('404 for an unknown partner', async () => {
    const res = await post(api.url, '/v1/sign/moonpay', { wallets: 'btc:x' });
    expect(res.status).to.equal(404);
    expect(res.body).to.deep.equal(errorBody(res, 'NOT_FOUND', 'There is no such partner.'));
    const whatever = await post(api.url, '/v1/sign/__proto__', 'not json', { 'content-type': 'text/plain' });
    expect(whatever.status).to.equal(404);
  });

  it('400 for a parameter outside the partner list, naming it', async () => {
    const res = await post(api.url, '/v1/sign/onramper', { wallets: 'btc:x', redirectUrl: 'https://evil' });
    expect(res.status).to.equal(400);
    expect(res.body).to.deep.equal({
      success: false,
      error: {
        code: 'INVALID_PARAMETER',
        message: 'Only wallets, networkWallets, walletAddressTags can be signed.',
        details: [{ field: '/body/redirectUrl', message: 'is not a signable parameter' }],
        requestId: res.headers.get('x-request-id'),
      },
    });
  });

  const badBodies: [string, unknown][] = [
    ['an empty object', {}],
    ['a number value', { wallets: 5 }],
    ['a null value', { wallets: null }],
    ['an object value', { wallets: { a: 'b' } }],
    ['an over-long value', { wallets: 'a'.repeat(5001) }],
  ];
  for (const [label, body] of badBodies) {
    it(`400 INVALID_PARAMETER for ${label}`, async () => {
      const res = await post(api.url, '/v1/sign/onramper', body);
      expect(res.status).to.equal(400);
      expect(res.body).to.deep.equal(errorBody(res, 'INVALID_PARAMETER'));
      expect(res.body.data).to.equal(undefined);
    });
  }

  const VALUE_RULE = 'must not contain &, =, %, +, #, whitespace, control characters or unpaired surrogates';

  it('a value cannot forge a parameter: & = % + # whitespace, control characters and lone surrogates are 400 naming the field', async () => {
    const forged = await post(api.url, '/v1/sign/onramper', {
      wallets: 'x&redirectAtCheckout=https://evil.example',
    });
    expect(forged.status).to.equal(400);
    expect(forged.body).to.deep.equal({
      success: false,
      error: {
        code: 'INVALID_PARAMETER',
        message: 'A field of the request body is invalid.',
        details: [{ field: '/body/wallets', message: VALUE_RULE }],
        requestId: forged.headers.get('x-request-id'),
      },
    });
    const bad = [
      'a&b',
      'a=b',
      'a%26b',
      'a+b',
      'a#b',
      'a b',
      'a\tb',
      'a\nb',
      'a\u0000b',
      'a\u007fb',
      'a\u0085b',
      'a\u2028b',
    ];
    for (const value of [...bad, 'a\ud800b', 'a\udc00']) {
      const res = await post(api.url, '/v1/sign/onramper', { wallets: 'btc:ok', networkWallets: value });
      expect(res.status, JSON.stringify(value)).to.equal(400);
      expect(res.body.error.details).to.deep.equal([{ field: '/body/networkWallets', message: VALUE_RULE }]);
    }
  });

  it('an empty value is 400 naming the field', async () => {
    const res = await post(api.url, '/v1/sign/onramper', { wallets: 'btc:x', walletAddressTags: '' });
    expect(res.status).to.equal(400);
    expect(res.body.error.details).to.deep.equal([
      { field: '/body/walletAddressTags', message: 'must NOT have fewer than 1 characters' },
    ]);
  });

  it('two different bodies never give the same signed string', async () => {
    const bodies: Record<string, string>[] = [
      { wallets: 'a', networkWallets: 'b' },
      { networkWallets: 'b', wallets: 'a' },
      { wallets: 'a&networkWallets=b' },
      { wallets: 'a=b' },
      { wallets: 'a%26networkWallets%3Db' },
      { wallets: 'a', walletAddressTags: 'b' },
      { wallets: 'a&walletAddressTags=b' },
      { wallets: 'a\ud800' },
      { wallets: 'a\ufffd' },
      { wallets: 'btc:ünïcode' },
      { wallets: 'btc:ünïcode', networkWallets: 'x' },
    ];
    const signedBy = new Map<string, string>();
    for (const body of bodies) {
      const res = await post(api.url, '/v1/sign/onramper', body);
      if (res.status !== 200) continue;
      const { signedData, signature } = res.body.data as { signedData: string; signature: string };
      expect(signature).to.equal(hmac(signedData));
      const earlier = signedBy.get(signature);
      expect(earlier, `${JSON.stringify(body)} signs like ${earlier}`).to.equal(undefined);
      signedBy.set(signature, JSON.stringify(body));
    }
    expect(signedBy.size).to.equal(6);
  });

  it('400 when the canonical string is over 5000 characters in total, 200 at exactly 5000', async () => {
    const wallets = 'a'.repeat(2000);
    const networkWallets = 'b'.repeat(5000 - 'wallets=&networkWallets='.length - 2000);
    const atLimit = await post(api.url, '/v1/sign/onramper', { wallets, networkWallets });
    expect(atLimit.status).to.equal(200);
    expect(atLimit.body.data.signedData).to.have.length(5000);
    const over = await post(api.url, '/v1/sign/onramper', { wallets, networkWallets: networkWallets + 'b' });
    expect(over.status).to.equal(400);
    expect(over.body).to.deep.equal(
      errorBody(over, 'INVALID_PARAMETER', 'The parameters are longer than 5000 characters.'),
    );
  });

  it('rejects wrong content type, broken JSON, non-object JSON and oversize bodies', async () => {
    const form = await post(api.url, '/v1/sign/onramper', 'wallets=x', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(form.status).to.equal(415);
    expect(form.body).to.deep.equal(errorBody(form, 'UNSUPPORTED_MEDIA_TYPE'));
    const broken = await post(api.url, '/v1/sign/onramper', '{"wallets":');
    expect(broken.status).to.equal(400);
    expect(broken.body).to.deep.equal(errorBody(broken, 'INVALID_JSON'));
    const array = await post(api.url, '/v1/sign/onramper', '["wallets"]');
    expect(array.body).to.deep.equal(errorBody(array, 'INVALID_JSON'));
    const huge = await post(api.url, '/v1/sign/onramper', { wallets: 'a'.repeat(20_000) });
    expect(huge.status).to.equal(413);
    expect(huge.body).to.deep.equal(errorBody(huge, 'PAYLOAD_TOO_LARGE'));
  });

  it('never writes the secret to a log line', async () => {
    await post(api.url, '/v1/sign/onramper', { wallets: 'btc:x' });
    await post(api.url, '/v1/sign/onramper', { nope: 'x' });
    expect(JSON.stringify(api.logs)).to.not.include(SECRET);
  });

  it('503 when the partner is known but its secret is not configured', async () => {
    const unconfigured = await startTestApi({});
    try {
      const res = await post(unconfigured.url, '/v1/sign/onramper', { wallets: 'btc:x' });
      expect(res.status).to.equal(503);
      expect(res.headers.get('retry-after')).to.equal(null);
      expect(res.body).to.deep.equal(
        errorBody(res, 'UNAVAILABLE', 'Signing for onramper is not configured.'),
      );
    } finally {
      await unconfigured.stop();
    }
  });

  it('has its own per-IP limit (SIGN_PER_MINUTE) shared through Redis', async () => {
    const limited = await startTestApi({ ONRAMPER_SECRET: SECRET, SIGN_PER_MINUTE: '2' });
    try {
      for (let i = 0; i < 2; i++) {
        expect((await post(limited.url, '/v1/sign/onramper', { wallets: 'x' })).status).to.equal(200);
      }
      const res = await post(limited.url, '/v1/sign/onramper', { wallets: 'x' });
      expect(res.status).to.equal(429);
      expect(Number(res.headers.get('retry-after'))).to.be.within(1, 60);
      expect(res.body).to.deep.equal(
        errorBody(res, 'RATE_LIMITED', 'Too many signing requests from this address; retry later.'),
      );
      expect(await redis().keys('relay:rl:sign:*')).to.have.length(1);
    } finally {
      await limited.stop();
    }
  });
});
