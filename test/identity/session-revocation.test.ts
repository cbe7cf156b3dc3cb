import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';
import type { AppError } from '../../src/core/errors.js';
import { createLogger } from '../../src/core/log.js';
import { registry } from '../../src/core/metrics.js';
import { createRedis, type RedisClient } from '../../src/core/redis/clients.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { WriteAck } from '../../src/core/redis/write-ack.js';
import { SessionCheck } from '../../src/identity/session/check.js';
import { SessionStore } from '../../src/identity/session/store.js';
import { SessionTokens } from '../../src/identity/session/tokens.js';
import { AuthStore } from '../../src/identity/store.js';
import { errorBody, get, post, startTestApi, type Reply, type TestApi } from '../helpers/api.js';
import { parsePrometheus, valueOf } from '../helpers/prometheus.js';
import { redis, testTopology } from '../helpers/redis.js';
import {
  SESSION_ENV,
  KEY_0,
  bearer,
  claimsOf,
  keysVariable,
  KEY_1,
  pairToken,
  tokenOf,
  walletToken,
} from '../helpers/sessions.js';
import { OTHER_PAIR, pairOf, signed, type Pair } from '../helpers/signing.js';
import { startTopology, TOPOLOGIES, type TestTopology } from '../helpers/topologies.js';
import { waitFor } from '../helpers/wait.js';

const keys = keysFor('relay:');
const silent = createLogger('error', {}, () => {});
const freshPair = (seed: number) => pairOf(Buffer.alloc(32, seed), Buffer.alloc(32, seed + 1));
const tx = (pair: Pair) => ({
  action: 'tx',
  payload: 'deadbeef',
  chain: 'btc',
  path: '0-0',
  wkIdentity: pair.wkIdentity,
});

function expectRefused(res: Reply, status: number, code: string, field?: string) {
  expect(res.status, res.text).to.equal(status);
  expect(res.body).to.deep.equal(errorBody(res, code));
  if (field) expect(res.body.error.details.map((d: { field: string }) => d.field)).to.deep.equal([field]);
}

/** The refusal of a read whose session ended. */
function expectEnded(res: Reply) {
  expectRefused(res, 401, 'AUTH_EXPIRED', '/headers/authorization');
  expect(res.body.error.message).to.equal('session ended');
  expect(res.headers.get('www-authenticate')).to.equal('Bearer');
}

const revocations = async () =>
  valueOf(parsePrometheus(await registry.metrics()), 'relay_session_revocations_total', {});

describe('sessions: POST /v1/session/revoke', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi(SESSION_ENV);
  });
  after(() => api.stop());

  it('a token of the pair (either side) revokes a side: its earlier tokens end, the stamp is set, later ones pass', async () => {
    const pair = freshPair(0x70);
    const key = await pairToken(api.url, 'key', pair);
    const wallet = await pairToken(api.url, 'wallet', pair);
    const read = (token: string) => get(api.url, `/v1/recoverypub/${pair.wkIdentity}`, bearer(token));
    expectRefused(await read(key), 404, 'NOT_FOUND');
    const counted = await revocations();
    const res = await post(
      api.url,
      '/v1/session/revoke',
      { wkIdentity: pair.wkIdentity, side: 'key' },
      bearer(wallet),
    );
    expect(res.status, res.text).to.equal(200);
    expect(Object.keys(res.body.data)).to.deep.equal(['revokedAt']);
    const stamp = Number(await redis().get(keys.sessionRevocation(pair.wkIdentity, 'key')));
    expect(res.body.data.revokedAt).to.equal(new Date(stamp).toISOString());
    expect(await redis().pttl(keys.sessionRevocation(pair.wkIdentity, 'key'))).to.be.within(
      3_620_000,
      3_630_000,
    );
    expect(await revocations()).to.equal(counted + 1);
    // The pod that revoked refuses them at once.
    expectEnded(await read(key));
    // The other side is untouched; a token issued after the revocation carries its stamp and passes.
    expectRefused(await read(wallet), 404, 'NOT_FOUND');
    const renewed = await pairToken(api.url, 'key', pair);
    expectRefused(await read(renewed), 404, 'NOT_FOUND');
    // A second revocation's stamp is strictly above the first.
    expect(
      (
        await post(
          api.url,
          '/v1/session/revoke',
          { wkIdentity: pair.wkIdentity, side: 'key' },
          bearer(renewed),
        )
      ).status,
    ).to.equal(200);
    expect(Number(await redis().get(keys.sessionRevocation(pair.wkIdentity, 'key')))).to.be.above(stamp);
  });

  it('a wallet revokes its own tokens; the signature fields for session revoke too, their nonce spent once', async () => {
    const pair = freshPair(0x72);
    const wallet = await walletToken(api.url, pair);
    const body = { walletIdentity: pair.walletIdentity };
    expect((await post(api.url, '/v1/session/revoke', body, bearer(wallet))).status).to.equal(200);
    expect(await redis().exists(keys.sessionRevocation(pair.walletIdentity, 'wallet'))).to.equal(1);
    const byKey = signed(
      { wkIdentity: pair.wkIdentity, side: 'wallet' },
      { purpose: 'session', pair, by: 'key' },
    );
    expect((await post(api.url, '/v1/session/revoke', byKey)).status).to.equal(200);
    expect(await redis().exists(keys.sessionRevocation(pair.wkIdentity, 'wallet'))).to.equal(1);
    expectRefused(
      await post(api.url, '/v1/session/revoke', byKey),
      401,
      'AUTH_REPLAYED',
      '/body/message/nonce',
    );
  });

  it('refusals: no credential, both, another pair’s token, a wrong purpose: 401, nothing set', async () => {
    const pair = freshPair(0x74);
    const body = { wkIdentity: pair.wkIdentity, side: 'key' };
    const own = await pairToken(api.url, 'key', pair);
    const other = await pairToken(api.url, 'key', OTHER_PAIR);
    expectRefused(await post(api.url, '/v1/session/revoke', body), 401, 'AUTH_REQUIRED');
    const signedBody = signed(body, { purpose: 'session', pair });
    expectRefused(
      await post(api.url, '/v1/session/revoke', signedBody, bearer(own)),
      401,
      'AUTH_INVALID',
      '/headers/authorization',
    );
    expectRefused(
      await post(api.url, '/v1/session/revoke', body, bearer(other)),
      401,
      'AUTH_INVALID',
      '/headers/authorization',
    );
    const wrongPurpose = signed(body, { purpose: 'action', pair });
    expectRefused(
      await post(api.url, '/v1/session/revoke', wrongPurpose),
      401,
      'AUTH_INVALID',
      '/body/message/action',
    );
    expectRefused(
      await post(api.url, '/v1/session/revoke', { walletIdentity: pair.walletIdentity }, bearer(own)),
      401,
      'AUTH_INVALID',
    );
    expect(await redis().keys('relay:session:rev:*')).to.deep.equal([]);
  });
});

describe('sessions: a pod reads the stamps again at most a second after it last did', () => {
  let client: RedisClient;
  let clock: number;
  let tokens: SessionTokens;
  let sessions: SessionStore;
  let auth: AuthStore;
  let check: SessionCheck;
  before(async () => {
    client = createRedis(testTopology(), 'store');
    await waitFor('the store client to connect', () => client.status === 'ready');
    const settings = loadConfig(SESSION_ENV).session;
    clock = Date.now();
    tokens = new SessionTokens(settings, () => clock);
    sessions = new SessionStore(client, keys, WriteAck.none);
    auth = new AuthStore(client, keys, WriteAck.none);
    check = new SessionCheck(tokens, sessions, 'open', () => clock);
  });
  after(() => client.quit());

  const binding = (pair: Pair) => ({
    kind: 'pair' as const,
    sub: pair.wkIdentity,
    sides: ['key', 'wallet'] as const,
  });
  const verdict = (token: string, pair: Pair) =>
    check.check(token, binding(pair), 'read', 'headers', silent).then(
      (claims) => claims.side,
      (err: AppError) => `${err.code}: ${err.message}`,
    );
  const issue = async (pair: Pair, side: 'key' | 'wallet') => {
    const stamps = await sessions.stamps(pair.wkIdentity, side);
    return (
      await tokens.issue({ sub: pair.wkIdentity, kind: 'pair', side, rev: stamps.rev ?? 0, pin: stamps.pin })
    ).token;
  };

  it('explicit revocation', async () => {
    const pair = freshPair(0x80);
    const token = await issue(pair, 'key');
    expect(await verdict(token, pair)).to.equal('key');
    await sessions.revoke(pair.wkIdentity, 'key', 60_000);
    clock += 999;
    expect(await verdict(token, pair)).to.equal('key');
    clock += 1;
    expect(await verdict(token, pair)).to.equal('AUTH_EXPIRED: session ended');
  });

  it('a pin change: deleted, or expired and set again, ends the tokens issued while pinned; a pin set later does not', async () => {
    const pair = freshPair(0x82);
    await auth.pin(pair.wkIdentity, ['wallet'], 1, 1_000);
    const pinned = await issue(pair, 'wallet');
    const unpinned = await issue(pair, 'key');
    expect(JSON.parse(Buffer.from(pinned.split('.')[1]!, 'base64url').toString()).pin).to.equal(1_000);
    // A renewal keeps the stamp.
    await auth.pin(pair.wkIdentity, ['wallet'], 1, 2_000);
    expect(await client.get(keys.authPin(pair.wkIdentity, 'wallet'))).to.equal('1000');
    await auth.pin(pair.wkIdentity, ['key'], 1, 3_000);
    clock += 1000;
    expect(await verdict(pinned, pair)).to.equal('wallet');
    expect(await verdict(unpinned, pair)).to.equal('key');
    await client.del(keys.authPin(pair.wkIdentity, 'wallet'));
    clock += 1000;
    expect(await verdict(pinned, pair)).to.equal('AUTH_EXPIRED: session ended');
    await auth.pin(pair.wkIdentity, ['wallet'], 1, 4_000);
    clock += 1000;
    expect(await verdict(pinned, pair)).to.equal('AUTH_EXPIRED: session ended');
    // A pin written by an older release holds 1: stamp 1.
    const legacy = freshPair(0x84);
    await client.set(keys.authPin(legacy.wkIdentity, 'key'), '1');
    const legacyToken = await issue(legacy, 'key');
    expect(await verdict(legacyToken, legacy)).to.equal('key');
  });

  it('expiry, on the relay’s clock with SESSION_CLOCK_SKEW_SECONDS of leeway', async () => {
    const pair = freshPair(0x86);
    const token = await issue(pair, 'key');
    clock += (3600 + 29) * 1000;
    expect(await verdict(token, pair)).to.equal('key');
    clock += 2000;
    expect(await verdict(token, pair)).to.equal('AUTH_EXPIRED: The session token expired.');
  });
});

/**
 * Every way a token ends, seen by another pod than the one that issued it, on a single Redis, a Sentinel group and a
 * Cluster.
 */
for (const name of TOPOLOGIES) {
  describe(`sessions across two pods on a ${name} Redis`, function () {
    this.timeout(60_000);
    let topology: TestTopology;
    let podA: TestApi;
    let podB: TestApi;
    before(async () => {
      topology = await startTopology(name);
      const env = {
        ...topology.env,
        ...SESSION_ENV,
        AUTH_PIN_DAYS: '1',
        REDIS_WAIT_REPLICAS: name === 'standalone' ? '0' : '1',
        REDIS_WAIT_TIMEOUT_MS: '1000',
      };
      podA = await startTestApi(env);
      podB = await startTestApi(env);
    });
    after(async () => {
      await podA?.stop();
      await podB?.stop();
      await topology?.stop();
    });

    const readOn = (pod: TestApi, pair: Pair, token: string) =>
      get(pod.url, `/v1/action/${pair.wkIdentity}`, bearer(token));

    it('explicit revocation on one pod ends the token on the other', async () => {
      const pair = freshPair(0x90);
      expect((await post(podA.url, '/v1/action', tx(pair))).status).to.equal(200);
      const token = await pairToken(podA.url, 'wallet', pair);
      expect((await readOn(podB, pair, token)).status).to.equal(200);
      const res = await post(
        podA.url,
        '/v1/session/revoke',
        { wkIdentity: pair.wkIdentity, side: 'wallet' },
        bearer(token),
      );
      expect(res.status, res.text).to.equal(200);
      await waitFor(
        'pod b to refuse the token',
        async () => (await readOn(podB, pair, token)).status === 401,
      );
      expectEnded(await readOn(podB, pair, token));
      const renewed = await pairToken(podB.url, 'wallet', pair);
      expect((await readOn(podA, pair, renewed)).status).to.equal(200);
    });

    it('a pin change on one pod ends the token issued while pinned on the other', async () => {
      const pair = freshPair(0x92);
      // A signed request to the key pins the wallet side.
      expect(
        (await post(podA.url, '/v1/action', signed(tx(pair), { purpose: 'action', pair }))).status,
      ).to.equal(200);
      const pin = await topology.admin.get(keys.authPin(pair.wkIdentity, 'wallet'));
      const token = await pairToken(podA.url, 'wallet', pair);
      expect(JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).pin).to.equal(Number(pin));
      expect((await readOn(podB, pair, token)).status).to.equal(200);
      // An operator unpins a lost device.
      await topology.admin.del(keys.authPin(pair.wkIdentity, 'wallet'));
      await waitFor(
        'pod b to refuse the token',
        async () => (await readOn(podB, pair, token)).status === 401,
      );
      expectEnded(await readOn(podB, pair, token));
    });

    it('a key removed from SESSION_KEYS, and expiry', async () => {
      const pair = freshPair(0x94);
      expect((await post(podA.url, '/v1/action', tx(pair))).status).to.equal(200);
      const old = await tokenOf(claimsOf(pair, 'key'), KEY_0);
      expect((await readOn(podB, pair, old)).status).to.equal(200);
      const rotated = await startTestApi({ ...topology.env, SESSION_KEYS: keysVariable(KEY_1) });
      try {
        expectRefused(await readOn(rotated, pair, old), 401, 'AUTH_INVALID', '/headers/authorization');
      } finally {
        await rotated.stop();
      }
      const now = Math.floor(Date.now() / 1000);
      const expired = await tokenOf(claimsOf(pair, 'key', { iat: now - 3700, exp: now - 100 }));
      expectRefused(await readOn(podB, pair, expired), 401, 'AUTH_EXPIRED', '/headers/authorization');
    });
  });
}
