import { expect } from 'chai';
import { errorBody, get, post, startTestApi, type Reply, type TestApi } from '../helpers/api.js';
import { redis } from '../helpers/redis.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { OTHER_PAIR, PAIR, pairOf, type Pair } from '../helpers/signing.js';
import {
  SESSION_ENV,
  bearer,
  challengeFor,
  pairExchange,
  pairToken,
  walletToken,
} from '../helpers/sessions.js';

const keys = keysFor('relay:');
/** A pair of its own per test, from two fixed private keys. */
const freshPair = (seed: number) => pairOf(Buffer.alloc(32, seed), Buffer.alloc(32, seed + 1));
const tx = (pair: Pair = PAIR) => ({
  action: 'tx',
  payload: 'deadbeef',
  chain: 'btc',
  path: '0-0',
  wkIdentity: pair.wkIdentity,
  utxos: [],
});

function expectRefused(res: Reply, status: number, code: string, field?: string) {
  expect(res.status, res.text).to.equal(status);
  expect(res.body).to.deep.equal(errorBody(res, code));
  if (field) expect(res.body.error.details.map((d: { field: string }) => d.field)).to.deep.equal([field]);
}

/** Every session key of the test Redis. */
const sessionKeys = () => redis().keys('relay:session:*');

describe('sessions: challenge and exchange', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi(SESSION_ENV);
  });
  after(() => api.stop());

  it('issues a challenge for a pair side, kept SESSION_CHALLENGE_SECONDS with its kind and side', async () => {
    const pair = freshPair(0x10);
    const res = await post(api.url, '/v1/session/challenge', { wkIdentity: pair.wkIdentity, side: 'key' });
    expect(res.status, res.text).to.equal(200);
    const { challenge, expiresAt } = res.body.data;
    expect(challenge).to.match(/^[0-9a-f]{64}$/);
    expect(Date.parse(expiresAt) - Date.now()).to.be.within(110_000, 120_000);
    expect(Object.keys(res.body.data)).to.deep.equal(['challenge', 'expiresAt']);
    const key = keys.sessionChallenge(pair.wkIdentity, challenge);
    expect(await redis().get(key)).to.equal('pair:key');
    expect(await redis().ttl(key)).to.be.within(110, 120);
  });

  it('exchanges a signed challenge once for a token of the pair side', async () => {
    const pair = freshPair(0x12);
    const challenge = await challengeFor(api.url, { wkIdentity: pair.wkIdentity, side: 'wallet' });
    const res = await post(api.url, '/v1/session', pairExchange(pair, 'wallet', challenge));
    expect(res.status, res.text).to.equal(200);
    const data = res.body.data;
    expect(data).to.include({
      tokenType: 'Bearer',
      expiresIn: 3600,
      wkIdentity: pair.wkIdentity,
      side: 'wallet',
    });
    expect(Date.parse(data.expiresAt) - Date.now()).to.be.within(3_590_000, 3_600_000);
    const [header, claims] = data.token
      .split('.')
      .slice(0, 2)
      .map((part: string) => JSON.parse(Buffer.from(part, 'base64url').toString()));
    expect(header).to.deep.equal({ alg: 'HS256', typ: 'JWT', kid: 'k1' });
    expect(Object.keys(claims)).to.deep.equal([
      'sub',
      'aud',
      'iat',
      'exp',
      'jti',
      'kind',
      'side',
      'rev',
      'pin',
    ]);
    expect(claims).to.include({
      sub: pair.wkIdentity,
      aud: 'multisig-relay',
      kind: 'pair',
      side: 'wallet',
      rev: 0,
      pin: 0,
    });
    expect(claims.exp - claims.iat).to.equal(3600);
    expect(claims.jti).to.match(/^[A-Za-z0-9_-]{22}$/);
    expect(await redis().get(keys.sessionChallenge(pair.wkIdentity, challenge))).to.equal('used');
    // The token is stored nowhere.
    expect(await sessionKeys()).not.to.include(data.token);
  });

  it('GET /v1/action/{id} answers a token of the pair, either side', async () => {
    const pair = freshPair(0x14);
    await post(api.url, '/v1/action', tx(pair));
    for (const side of ['key', 'wallet'] as const) {
      const token = await pairToken(api.url, side, pair);
      const res = await get(api.url, `/v1/action/${pair.wkIdentity}`, bearer(token));
      expect(res.status, res.text).to.equal(200);
      expect(res.body.data).to.include({ wkIdentity: pair.wkIdentity, action: 'tx' });
    }
    const other = await pairToken(api.url, 'key', OTHER_PAIR);
    const refused = await get(api.url, `/v1/action/${pair.wkIdentity}`, bearer(other));
    expectRefused(refused, 401, 'AUTH_INVALID', '/headers/authorization');
    expect(refused.headers.get('www-authenticate')).to.equal('Bearer');
  });

  it('a wallet alone: signed by the key behind its walletIdentity, reads its pairing record', async () => {
    const token = await walletToken(api.url, PAIR);
    const res = await get(api.url, `/v1/sync/${PAIR.walletIdentity}`, bearer(token));
    expect(res.status).to.equal(404);
    expect(res.body.error.code).to.equal('NOT_FOUND');
  });
});
