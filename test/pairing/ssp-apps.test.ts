import { createHmac, randomBytes } from 'node:crypto';
import { base58 } from '@scure/base';
import { expect } from 'chai';
import { API_PROFILES } from '../../src/core/config/config.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { MarketStore } from '../../src/market/store.js';
import { errorBody, get, post, request, startTestApi, type Reply, type TestApi } from '../helpers/api.js';
import { redis } from '../helpers/redis.js';
import { OTHER_PAIR, PAIR, pairOf, signed, type Pair } from '../helpers/signing.js';
import { parsePrometheus, valueOf } from '../helpers/prometheus.js';
import { registry } from '../../src/core/metrics.js';
import { startTokenRelay, USDC, USDC_INFO, type TokenRelay } from '../helpers/token-relay.js';

/**
 * The apps of today (docs/api.md#running-in-front-of-the-ssp-apps): for every read the released apps make, the
 * body read the way the app reads it (axios' `res.data` is the body) under `ssp-apps`, the envelope under
 * `standard`, and an error in the envelope under both.
 */

const keys = keysFor('relay:');
const SECRET = 'test-onramper-secret-0123456789';
const hmac = (data: string) => createHmac('sha256', SECRET).update(data, 'utf8').digest('hex');
const LTUB =
  'Ltub2YRPmGvjNb6E5s8xSJAmZhm1MUp4njNtEeAFkr5MYa7ZQdGeb7Mj6hwrr5qW7dr7mtJo8ka7YLCgcbS7Q8Q8jrWN2C7dzSpURoEprNsw7v2';
const xpubSignature =
  'H9L5yLFjti0QTHhPyFrZCT1V/MMnBtXKmoiKDZ78NDBjERki6ZTQZdSMCtkgoNmp17By9ItJr8o7ChX0XxY91nk=';
const recoveryXpub = `xpub${'A'.repeat(107)}`;
const DAY = 86_400;

const metric = async (name: string, labels: Record<string, string>) =>
  valueOf(parsePrometheus(await registry.metrics()), name, labels);

/** An app's form POST: the string body as the wallet's HTTP client sends it. */
const postText = (api: TestApi, path: string, body: string, type: string) =>
  request(api.url, path, { method: 'POST', headers: { 'content-type': type }, body });

/** A signed recovery xpub, as the key app sends it. */
const recoveryPub = (pair: Pair = PAIR, xpub = recoveryXpub) =>
  signed(
    { wkIdentity: pair.wkIdentity, recoveryXpub: xpub, xpubSignature, chain: 'btc' },
    { purpose: 'sync', pair, by: 'key' },
  );

for (const profile of API_PROFILES) {
  const apps = profile === 'ssp-apps';
  /** What a success answer looks like under this profile: the payload alone for the apps' reads. */
  const answered = (data: unknown) => (apps ? data : { success: true, data });
  /** What the app reads off the body. */
  const read = (res: Reply) => (apps ? res.body : res.body.data);

  describe(`API_PROFILE=${profile}: the reads the released apps make`, () => {
    let relay: TokenRelay;
    let api: TestApi;
    before(async () => {
      relay = await startTokenRelay({
        API_PROFILE: profile,
        ONRAMPER_SECRET: SECRET,
        SERVICES: '{"onramp":true,"offramp":false,"swap":true}',
      });
      api = relay.api;
    });
    after(() => relay.stop());

    it('GET /v1/sync/{id}: the wallet reads .chain and .keyXpub of the record; 404 in the envelope', async () => {
      const record = { chain: 'ltc', walletIdentity: 'LWallet1', keyXpub: LTUB, wkIdentity: 'ltc1qpair' };
      const saved = await post(api.url, '/v1/sync', record);
      expect(saved.body).to.deep.equal({ success: true, data: record });
      const res = await get(api.url, '/v1/sync/LWallet1');
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal(answered(record));
      expect(read(res).chain).to.equal('ltc');
      expect(read(res).keyXpub).to.equal(LTUB);
      const missing = await get(api.url, '/v1/sync/nobody');
      expect(missing.status).to.equal(404);
      expect(missing.body).to.deep.equal(
        errorBody(missing, 'NOT_FOUND', 'No synchronization record for this wallet identity.'),
      );
    });

    it('GET /v1/action/{id}: the key reads .action and .payload, the wallet .expireAt; 404 in the envelope', async () => {
      const body = { chain: 'btc', wkIdentity: 'bc1qapps', action: 'tx', payload: 'deadbeef', path: '0-0' };
      const posted = await post(api.url, '/v1/action', body);
      expect(posted.status).to.equal(200);
      const record = posted.body.data;
      expect(record.expireAt).to.equal(apps ? record.expiresAt : undefined);
      const res = await get(api.url, '/v1/action/bc1qapps');
      expect(res.body).to.deep.equal(answered(record));
      expect(read(res).action).to.equal('tx');
      expect(read(res).payload).to.equal('deadbeef');
      if (apps) expect(Date.parse(read(res).expireAt) - Date.parse(read(res).createdAt)).to.equal(900_000);
      expect(JSON.parse((await redis().get(keys.action('bc1qapps')))!)).to.deep.equal(record);
      const missing = await get(api.url, '/v1/action/bc1qnobody');
      expect(missing.status).to.equal(404);
      expect(missing.body.success).to.equal(false);
      expect(missing.body.error.code).to.equal('NOT_FOUND');
    });

    it('GET /v1/rates and /v1/networkfees: .crypto, .fiat and the rows; 503 in the envelope before a fetch', async () => {
      for (const path of ['/v1/rates', '/v1/networkfees']) {
        const early = await get(api.url, path);
        expect(early.status).to.equal(503);
        expect(early.body.error.code).to.equal('UNAVAILABLE');
      }
      const store = new MarketStore(redis(), keys);
      const at = new Date('2026-11-25T12:00:00.000Z');
      await store.saveRatesPart('crypto', { btc: 97000.1, eth: 3500.2, sol: 140.5, solMainnet: 140.5 }, at);
      await store.saveRatesPart('fiat', { USD: 1, EUR: 0.92 }, at);
      const rates = await get(api.url, '/v1/rates');
      expect(read(rates).crypto.solMainnet).to.equal(140.5);
      expect(read(rates).fiat.EUR).to.equal(0.92);
      expect(rates.body).to.deep.equal(answered(read(rates)));
      expect(Object.keys(read(rates))).to.deep.equal(['fiat', 'crypto', 'updatedAt']);
      const row = {
        coin: 'rvn',
        economy: 1050,
        normal: 1050,
        fast: 1050,
        recommended: 1050,
        updatedAt: at.toISOString(),
      };
      await store.saveFees([row]);
      const fees = await get(api.url, '/v1/networkfees');
      expect(fees.body).to.deep.equal(answered([row]));
      expect(read(fees).find((entry: { coin: string }) => entry.coin === 'rvn').fast).to.equal(1050);
    });

    it('GET /v1/services: .onramp and .swap; a wrong method is 405 in the envelope', async () => {
      const res = await get(api.url, '/v1/services');
      expect(res.body).to.deep.equal(answered({ onramp: true, offramp: false, swap: true }));
      expect(read(res).swap).to.equal(true);
      const wrong = await post(api.url, '/v1/services', {});
      expect(wrong.status).to.equal(405);
      expect(wrong.body.error.code).to.equal('METHOD_NOT_ALLOWED');
    });

    it('GET /v1/tokeninfo/{network}/{address}: .decimals and .symbol; 400 in the envelope', async () => {
      const res = await get(api.url, `/v1/tokeninfo/eth/${USDC}`);
      expect(res.body).to.deep.equal(answered(USDC_INFO));
      expect(read(res).decimals).to.equal(6);
      const bad = await get(api.url, '/v1/tokeninfo/eth/0x12');
      expect(bad.status).to.equal(400);
      expect(bad.body.error.code).to.equal('INVALID_PARAMETER');
    });

    it('GET /v1/recoverypub/{id}: .recoveryXpub of the record; 404 in the envelope', async () => {
      const missing = await get(api.url, `/v1/recoverypub/${PAIR.wkIdentity}`);
      expect(missing.status).to.equal(404);
      expect(missing.body).to.deep.equal(
        errorBody(missing, 'NOT_FOUND', 'No recovery xpub is stored for this pair.'),
      );
      const stored = await post(api.url, '/v1/recoverypub', recoveryPub());
      expect(stored.status, stored.text).to.equal(200);
      const res = await get(api.url, `/v1/recoverypub/${PAIR.wkIdentity}`);
      expect(res.body).to.deep.equal(answered(stored.body.data));
      expect(read(res).recoveryXpub).to.equal(recoveryXpub);
    });

    it('POST /v1/sign/onramper: JSON answers .signature under both; the wallet’s form and a text body only under ssp-apps', async () => {
      const json = await post(api.url, '/v1/sign/onramper', { networkWallets: 'bitcoin:bc1qxyz' });
      const signedData = 'networkWallets=bitcoin:bc1qxyz';
      expect(json.body).to.deep.equal(answered({ signature: hmac(signedData), signedData }));
      const form = await postText(
        api,
        '/v1/sign/onramper',
        'networkWallets=bitcoin%3Abc1qxyz&wallets=btc:bc1qxyz,eth:0xab',
        'application/x-www-form-urlencoded',
      );
      const text = await postText(api, '/v1/sign/onramper', 'wallets=btc:bc1qxyz', 'text/plain');
      if (apps) {
        const both = 'networkWallets=bitcoin:bc1qxyz&wallets=btc:bc1qxyz,eth:0xab';
        expect(form.body).to.deep.equal({ signature: hmac(both), signedData: both });
        expect(text.body).to.deep.equal({
          signature: hmac('wallets=btc:bc1qxyz'),
          signedData: 'wallets=btc:bc1qxyz',
        });
        const outside = await postText(api, '/v1/sign/onramper', 'redirectUrl=https:x', 'text/plain');
        expect(outside.status).to.equal(400);
        expect(outside.body.error.details).to.deep.equal([
          { field: '/body/redirectUrl', message: 'is not a signable parameter' },
        ]);
        for (const type of ['application/x-www-form-urlencoded', 'text/plain']) {
          const proto = await postText(api, '/v1/sign/onramper', 'wallets=btc:x&__proto__=y', type);
          expect(proto.status, type).to.equal(400);
          expect(proto.body, type).to.deep.equal({
            success: false,
            error: {
              code: 'INVALID_PARAMETER',
              message: 'Only wallets, networkWallets, walletAddressTags can be signed.',
              details: [{ field: '/body/__proto__', message: 'is not a signable parameter' }],
              requestId: proto.headers.get('x-request-id'),
            },
          });
        }
        for (const broken of ['wallets', 'wallets=a&wallets=b', '=x', 'wallets=%E0%A4%A']) {
          const res = await postText(api, '/v1/sign/onramper', broken, 'application/x-www-form-urlencoded');
          expect(res.status, broken).to.equal(400);
          expect(res.body.error.code, broken).to.equal('INVALID_PARAMETER');
        }
      } else {
        for (const res of [form, text]) {
          expect(res.status).to.equal(415);
          expect(res.body.error.code).to.equal('UNSUPPORTED_MEDIA_TYPE');
        }
      }
    });

    it('GET /v1/nonces/status/{id}: the envelope under both profiles (the apps read .data.data)', async () => {
      const res = await get(api.url, `/v1/nonces/status/${PAIR.wkIdentity}`);
      expect(res.body).to.deep.equal({
        success: true,
        data: { replenishNeeded: { key: false, wallet: false } },
      });
      const bad = await get(api.url, '/v1/nonces/status/a.b');
      expect(bad.status).to.equal(400);
      for (const path of ['/v1/enterprise/status', '/v1/nonces']) {
        expect((await get(api.url, path)).status).to.equal(404);
      }
    });

    it('CORS allows the wallet’s sspwkid header, and a request carrying it is answered', async () => {
      const preflight = await request(api.url, '/v1/action/bc1qapps', {
        method: 'OPTIONS',
        headers: {
          origin: 'chrome-extension://wallet',
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'sspwkid,content-type',
        },
      });
      expect(preflight.status).to.equal(204);
      expect(preflight.headers.get('access-control-allow-headers')).to.equal(
        'Content-Type,X-Request-Id,sspwkid,Authorization,If-None-Match',
      );
      const res = await get(api.url, `/v1/nonces/status/${PAIR.wkIdentity}`, {
        origin: 'chrome-extension://wallet',
        sspwkid: PAIR.wkIdentity,
      });
      expect(res.status).to.equal(200);
      expect(JSON.stringify(api.logs)).to.not.include(PAIR.wkIdentity);
    });
  });
}

/** 20 distinct base58 public keys, as the key app sends for a Solana chain. */
const solanaKeys = (count = 20) =>
  JSON.stringify(Array.from({ length: count }, (_, i) => base58.encode(Buffer.alloc(32, i + 1))));
const nonceObjects = Array.from({ length: 50 }, () => ({
  kPublic: `02${randomBytes(32).toString('hex')}`,
  kTwoPublic: `03${randomBytes(32).toString('hex')}`,
}));

describe('POST /v1/sync: the bodies the released key app sends', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi({ TOKEN_REGISTRATIONS_PER_HOUR: '2', AUTH_PIN_DAYS: '1' });
  });
  after(() => api.stop());

  const base = {
    walletIdentity: 'wallet-apps',
    keyXpub: `xpub${'B'.repeat(107)}`,
    wkIdentity: 'bc1qappspair',
  };

  it('an EVM chain with 50 nonce objects: stored and returned in the shape given', async () => {
    const body = { chain: 'eth', ...base, publicNonces: nonceObjects };
    const res = await post(api.url, '/v1/sync', body);
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.deep.equal({ success: true, data: body });
    expect(await redis().get(keys.sync('wallet-apps'))).to.equal(JSON.stringify(body));
  });

  it('an older pair’s keyIdentity "" and a null field count as absent', async () => {
    const res = await post(api.url, '/v1/sync', { chain: 'btc', ...base, keyIdentity: '', walletXpub: null });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data).to.deep.equal({ chain: 'btc', ...base });
    expect(JSON.parse((await redis().get(keys.sync('wallet-apps')))!)).to.not.have.property('keyIdentity');
  });

  it('solMainnet with 20 keys is stored; 19 keys, a duplicate key or an xpub are 400 and write nothing', async () => {
    const body = { chain: 'solMainnet', ...base, keyXpub: solanaKeys(), walletXpub: solanaKeys() };
    const res = await post(api.url, '/v1/sync', body);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data).to.deep.equal(body);
    const duplicate = JSON.parse(solanaKeys()) as string[];
    duplicate[19] = duplicate[0]!;
    for (const [label, keyXpub] of [
      ['19 keys', solanaKeys(19)],
      ['a duplicate', JSON.stringify(duplicate)],
      ['an xpub', base.keyXpub],
      ['not JSON', `[${'x'.repeat(40)}`],
    ] as const) {
      await redis().del(keys.sync('wallet-apps'));
      const refused = await post(api.url, '/v1/sync', { ...body, keyXpub });
      expect(refused.status, label).to.equal(400);
      expect(refused.body.error.details, label).to.deep.equal([
        {
          field: '/body/keyXpub',
          message: 'must be a JSON array of 20 distinct base58 public keys of 32 to 64 characters',
        },
      ]);
      expect(await redis().exists(keys.sync('wallet-apps')), label).to.equal(0);
    }
    const listOnBitcoin = await post(api.url, '/v1/sync', { ...body, chain: 'btc' });
    expect(listOnBitcoin.status).to.equal(400);
  });

  it('a bad nonce object is 400 and writes nothing', async () => {
    for (const item of [{ kPublic: 'zz', kTwoPublic: '02' }, { kPublic: '02' }, 5]) {
      const res = await post(api.url, '/v1/sync', { chain: 'eth', ...base, publicNonces: [item] });
      expect(res.status, JSON.stringify(item)).to.equal(400);
      expect(res.body.error.details[0].field).to.equal('/body/publicNonces/0');
    }
    expect(await redis().exists(keys.sync('wallet-apps'))).to.equal(0);
  });

  it('keyToken is registered for the key side as POST /v1/token would, and dropped from the record', async () => {
    const res = await post(api.url, '/v1/sync', { chain: 'btc', ...base, keyToken: 'fcm-token-of-the-key' });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data).to.deep.equal({ chain: 'btc', ...base });
    expect(await redis().zrange(keys.tokens('bc1qappspair', 'key'), 0, -1)).to.deep.equal([
      'fcm-token-of-the-key',
    ]);
    expect(await redis().get(keys.tokenOwner('key', 'fcm-token-of-the-key'))).to.equal('bc1qappspair');
    expect(await redis().exists(keys.tokens('bc1qappspair', 'wallet'))).to.equal(0);
    // keyToken null is absent: nothing more is registered.
    expect((await post(api.url, '/v1/sync', { chain: 'btc', ...base, keyToken: null })).status).to.equal(200);
    expect(await redis().zcard(keys.tokens('bc1qappspair', 'key'))).to.equal(1);
  });

  it('over TOKEN_REGISTRATIONS_PER_HOUR the sync is still stored and answered 200, its keyToken skipped and counted', async () => {
    for (const token of ['t1', 't2']) {
      expect((await post(api.url, '/v1/sync', { chain: 'btc', ...base, keyToken: token })).status).to.equal(
        200,
      );
    }
    const skipped = () => metric('relay_sync_key_tokens_skipped_total', { limit: 'pair_side' });
    const before = await skipped();
    const over = await post(api.url, '/v1/sync', { chain: 'ltc', ...base, keyToken: 't3' });
    expect(over.status, over.text).to.equal(200);
    expect(over.body).to.deep.equal({ success: true, data: { chain: 'ltc', ...base } });
    expect(await redis().get(keys.sync('wallet-apps'))).to.equal(JSON.stringify({ chain: 'ltc', ...base }));
    expect(await redis().zrange(keys.tokens('bc1qappspair', 'key'), 0, -1)).to.deep.equal(['t1', 't2']);
    expect(await redis().exists(keys.tokenOwner('key', 't3'))).to.equal(0);
    expect(await skipped()).to.equal(before + 1);
    const line = api.logs.find(
      (entry) => entry.msg === 'sync stored without its keyToken: a token registration limit refused it',
    );
    expect(line).to.include({ level: 'info', limit: 'pair_side' });
    expect(JSON.stringify(line)).not.to.match(/bc1qappspair|wallet-apps|t3/);
    // POST /v1/token itself still refuses it.
    const token = await post(api.url, '/v1/token', { wkIdentity: 'bc1qappspair', keyToken: 't3' });
    expect(token.status).to.equal(429);
    expect(token.body).to.deep.equal(
      errorBody(token, 'RATE_LIMITED', 'Too many key token registrations for this pair; retry later.'),
    );
  });

  it('under a key-side pin an unsigned sync still pairs, its keyToken ignored; a signed one registers it', async () => {
    const pair = OTHER_PAIR;
    const sync = {
      chain: 'btc',
      walletIdentity: pair.walletIdentity,
      keyXpub: base.keyXpub,
      wkIdentity: pair.wkIdentity,
    };
    const pinning = signed({ ...sync, keyToken: 'signed-token' }, { purpose: 'sync', pair, by: 'key' });
    const first = await post(api.url, '/v1/sync', pinning);
    expect(first.status, first.text).to.equal(200);
    expect(await redis().exists(keys.authPin(pair.wkIdentity, 'key'))).to.equal(1);
    const unsigned = await post(api.url, '/v1/sync', { ...sync, chain: 'ltc', keyToken: 'stranger-token' });
    expect(unsigned.status, unsigned.text).to.equal(200);
    expect(unsigned.body.data.chain).to.equal('ltc');
    expect(await redis().zrange(keys.tokens(pair.wkIdentity, 'key'), 0, -1)).to.deep.equal(['signed-token']);
    // The signed sync resent byte for byte: nothing written again, the record it stored is gone, so refused.
    const resent = await post(api.url, '/v1/sync', pinning);
    expect(resent.status).to.equal(401);
    expect(resent.body.error.code).to.equal('AUTH_REPLAYED');
  });
});

describe('POST /v1/recoverypub', () => {
  const apis: Record<string, TestApi> = {};
  const MODES = { off: 'off', optional: 'optional', required: 'required' } as const;
  before(async () => {
    for (const mode of Object.values(MODES)) {
      // sync may not be required (no key app signs its sync); the recovery xpub is required regardless.
      apis[mode] = await startTestApi({
        AUTH_MODE: mode,
        AUTH_ROUTES: mode === 'required' ? 'sync=optional' : '',
      });
    }
  });
  after(async () => {
    for (const api of Object.values(apis)) await api.stop();
  });
  const key = keys.recoveryPub(PAIR.wkIdentity);

  it('a signed POST is stored for RECOVERYPUB_TTL_DAYS (730) and answered in the envelope', async () => {
    const res = await post(apis.optional!.url, '/v1/recoverypub', recoveryPub());
    expect(res.status, res.text).to.equal(200);
    const { createdAt } = res.body.data;
    expect(Date.now() - Date.parse(createdAt)).to.be.within(0, 5000);
    expect(res.body).to.deep.equal({
      success: true,
      data: { wkIdentity: PAIR.wkIdentity, recoveryXpub, xpubSignature, chain: 'btc', createdAt },
    });
    expect(JSON.parse((await redis().get(key))!)).to.deep.equal(res.body.data);
    expect(await redis().ttl(key)).to.be.within(730 * DAY - 60, 730 * DAY);
  });

  it('each read and write renews the lifetime; a record stored without one gets it on its next read or write', async () => {
    const api = await startTestApi({ RECOVERYPUB_TTL_DAYS: '3' });
    try {
      const stored = await post(api.url, '/v1/recoverypub', recoveryPub());
      expect(stored.status, stored.text).to.equal(200);
      expect(await redis().ttl(key)).to.be.within(3 * DAY - 60, 3 * DAY);
      await redis().expire(key, 100);
      const read = await get(api.url, `/v1/recoverypub/${PAIR.wkIdentity}`);
      expect(read.body).to.deep.equal({ success: true, data: stored.body.data });
      expect(await redis().ttl(key)).to.be.within(3 * DAY - 60, 3 * DAY);
      // A record an earlier release stored: no expiry until it is touched.
      await redis().persist(key);
      expect((await get(api.url, `/v1/recoverypub/${PAIR.wkIdentity}`)).status).to.equal(200);
      expect(await redis().ttl(key)).to.be.within(3 * DAY - 60, 3 * DAY);
      await redis().persist(key);
      const newer = `xpub${'D'.repeat(107)}`;
      expect((await post(api.url, '/v1/recoverypub', recoveryPub(PAIR, newer))).status).to.equal(200);
      expect(JSON.parse((await redis().get(key))!).recoveryXpub).to.equal(newer);
      expect(await redis().ttl(key)).to.be.within(3 * DAY - 60, 3 * DAY);
      const missing = await get(api.url, `/v1/recoverypub/${OTHER_PAIR.wkIdentity}`);
      expect(missing.status).to.equal(404);
      expect(await redis().exists(keys.recoveryPub(OTHER_PAIR.wkIdentity))).to.equal(0);
    } finally {
      await api.stop();
    }
  });

  it('RECOVERYPUB_CREATIONS_PER_ADDRESS_PER_DAY (20) new records per address: the 21st is 429 and writes nothing; replacing one’s own is free; another address is unaffected', async () => {
    const api = await startTestApi({ TRUST_PROXY_HOPS: '1' });
    const from = (ip: string) => ({ 'X-Forwarded-For': ip });
    const created = () => metric('relay_recoverypub_writes_total', { outcome: 'created' });
    const replaced = () => metric('relay_recoverypub_writes_total', { outcome: 'replaced' });
    const refused = () => metric('relay_rate_limit_rejections_total', { limiter: 'recoverypub' });
    try {
      const pairs = Array.from({ length: 22 }, (_, i) =>
        pairOf(Buffer.alloc(32, i + 1), Buffer.alloc(32, i + 101)),
      );
      const [createdBefore, replacedBefore, refusedBefore] = [
        await created(),
        await replaced(),
        await refused(),
      ];
      for (const pair of pairs.slice(0, 20)) {
        const res = await post(api.url, '/v1/recoverypub', recoveryPub(pair), from('203.0.113.1'));
        expect(res.status, res.text).to.equal(200);
      }
      expect(await created()).to.equal(createdBefore + 20);
      const body = recoveryPub(pairs[20]!);
      const over = await post(api.url, '/v1/recoverypub', body, from('203.0.113.1'));
      expect(over.status).to.equal(429);
      expect(over.body).to.deep.equal(
        errorBody(
          over,
          'RATE_LIMITED',
          'Too many recovery xpub records created from this address; retry later.',
        ),
      );
      expect(Number(over.headers.get('retry-after'))).to.be.within(86_000, 86_400);
      expect(await redis().exists(keys.recoveryPub(pairs[20]!.wkIdentity))).to.equal(0);
      expect(await created()).to.equal(createdBefore + 20);
      // Refused before anything was written, its signed message may be sent again: refused the same way.
      expect((await post(api.url, '/v1/recoverypub', body, from('203.0.113.1'))).status).to.equal(429);
      expect(await refused()).to.equal(refusedBefore + 2);
      const counted = await redis().get('relay:rl:recoverypub:203.0.113.1');
      const newer = `xpub${'E'.repeat(107)}`;
      const own = await post(api.url, '/v1/recoverypub', recoveryPub(pairs[0]!, newer), from('203.0.113.1'));
      expect(own.status, own.text).to.equal(200);
      expect(JSON.parse((await redis().get(keys.recoveryPub(pairs[0]!.wkIdentity)))!).recoveryXpub).to.equal(
        newer,
      );
      expect(await redis().get('relay:rl:recoverypub:203.0.113.1')).to.equal(counted);
      expect(await replaced()).to.equal(replacedBefore + 1);
      const elsewhere = await post(api.url, '/v1/recoverypub', recoveryPub(pairs[21]!), from('198.51.100.2'));
      expect(elsewhere.status, elsewhere.text).to.equal(200);
      expect(await redis().exists(keys.recoveryPub(pairs[21]!.wkIdentity))).to.equal(1);
      expect(await created()).to.equal(createdBefore + 21);
    } finally {
      await api.stop();
    }
  });

  for (const mode of Object.values(MODES)) {
    it(`an unsigned POST is 401 AUTH_REQUIRED under AUTH_MODE=${mode}, and writes nothing`, async () => {
      const body = { wkIdentity: PAIR.wkIdentity, recoveryXpub, xpubSignature, chain: 'btc' };
      const res = await post(apis[mode]!.url, '/v1/recoverypub', body);
      expect(res.status).to.equal(401);
      expect(res.body).to.deep.equal(
        errorBody(res, 'AUTH_REQUIRED', 'This request must be signed by one of the pair’s keys.'),
      );
      expect(await redis().exists(key)).to.equal(0);
    });
  }

  it('a message signed for another purpose is refused; a new signed POST replaces the record', async () => {
    const wrong = signed(
      { wkIdentity: PAIR.wkIdentity, recoveryXpub, xpubSignature, chain: 'btc' },
      { purpose: 'action', by: 'key' },
    );
    const refused = await post(apis.optional!.url, '/v1/recoverypub', wrong);
    expect(refused.status).to.equal(401);
    expect(refused.body.error.details).to.deep.equal([
      { field: '/body/message/action', message: 'the message is not signed for sync' },
    ]);
    expect((await post(apis.off!.url, '/v1/recoverypub', recoveryPub())).status).to.equal(200);
    const newer = `xpub${'C'.repeat(107)}`;
    const replaced = await post(apis.required!.url, '/v1/recoverypub', recoveryPub(PAIR, newer));
    expect(replaced.status).to.equal(200);
    expect(JSON.parse((await redis().get(key))!).recoveryXpub).to.equal(newer);
  });

  it('a resend answers what it stored, byte for byte, and writes nothing', async () => {
    const body = recoveryPub();
    const first = await post(apis.optional!.url, '/v1/recoverypub', body);
    const stored = await redis().get(key);
    const resent = await post(apis.required!.url, '/v1/recoverypub', body);
    expect(resent.status).to.equal(200);
    expect(resent.text).to.equal(first.text);
    expect(await redis().get(key)).to.equal(stored);
  });

  it('bad fields are 400 and write nothing', async () => {
    for (const [field, value] of [
      ['recoveryXpub', 'xpub+not/base58'],
      ['recoveryXpub', 'x'.repeat(201)],
      ['xpubSignature', 'not base64!'],
      ['chain', 'a.b'],
    ] as const) {
      const body = signed(
        { wkIdentity: PAIR.wkIdentity, recoveryXpub, xpubSignature, chain: 'btc', [field]: value },
        { purpose: 'sync', by: 'key' },
      );
      const res = await post(apis.optional!.url, '/v1/recoverypub', body);
      expect(res.status, field).to.equal(400);
      expect(res.body.error.details[0].field, field).to.equal(`/body/${field}`);
      expect(await redis().exists(key)).to.equal(0);
    }
  });
});
