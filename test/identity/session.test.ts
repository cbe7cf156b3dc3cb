import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { io, type Socket } from 'socket.io-client';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/core/config/errors.js';
import { registry } from '../../src/core/metrics.js';
import { keysFor } from '../../src/core/redis/keys.js';
import type { JoinAnswer } from '../../src/realtime/rooms.js';
import { errorBody, get, post, startTestApi, testEnv, type Reply, type TestApi } from '../helpers/api.js';
import { runNode } from '../helpers/child.js';
import { parsePrometheus, valueOf } from '../helpers/prometheus.js';
import { commandsDuring, redis, testRedis } from '../helpers/redis.js';
import {
  KEY_0,
  KEY_1,
  SESSION_ENV,
  bearer,
  challengeFor,
  claimsOf,
  keysVariable,
  pairExchange,
  pairToken,
  tokenOf,
  walletExchange,
  walletToken,
} from '../helpers/sessions.js';
import { OTHER_PAIR, PAIR, STRANGER_PRIVATE, pairOf, signed, type Pair } from '../helpers/signing.js';
import { waitFor } from '../helpers/wait.js';

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
const txid = (pair: Pair) => ({
  chain: 'btc',
  wkIdentity: pair.wkIdentity,
  action: 'txid',
  payload: 'ab'.repeat(32),
});

function expectRefused(res: Reply, status: number, code: string, field?: string) {
  expect(res.status, res.text).to.equal(status);
  expect(res.body).to.deep.equal(errorBody(res, code));
  if (field) expect(res.body.error.details.map((d: { field: string }) => d.field)).to.deep.equal([field]);
}

/** A read's 401: the envelope, the field, and the Bearer challenge header. */
function expectReadRefused(res: Reply, code: string, field?: string) {
  expectRefused(res, 401, code, field);
  expect(res.headers.get('www-authenticate')).to.equal('Bearer');
}

async function metric(name: string, labels: Record<string, string>): Promise<number> {
  return valueOf(parsePrometheus(await registry.metrics()), name, labels);
}

/** What Redis holds of sessions and a pair's mailbox, to assert a refusal wrote nothing. */
async function snapshot(pair: Pair = PAIR) {
  const sessionKeys = (await redis().keys('relay:session:*')).sort();
  const values = await Promise.all(sessionKeys.map((key) => redis().get(key)));
  return { sessionKeys, values, mailbox: await redis().get(keys.action(pair.wkIdentity)) };
}

/** Connects to a socket path, sends one join with a callback, collects the answer and the disconnects. */
async function joinOnce(base: string, side: 'key' | 'wallet', data: unknown, sockets: Socket[]) {
  const socket = io(base, { path: `/v1/socket/${side}`, reconnection: false });
  sockets.push(socket);
  const disconnects: string[] = [];
  const received: { event: string; data: unknown }[] = [];
  socket.on('disconnect', (reason) => disconnects.push(reason));
  socket.onAny((event: string, data: unknown) => received.push({ event, data }));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const answer: JoinAnswer = await socket.timeout(5000).emitWithAck('join', data);
  if (!answer.ok) await waitFor('the disconnect', () => disconnects.length > 0);
  return { answer, disconnects, received };
}

describe('sessions: configuration', () => {
  it('defaults: reads open, sessions off, the documented audience and lifetimes', () => {
    expect(loadConfig({}).session).to.deep.equal({
      reads: 'open',
      keys: [],
      audience: 'multisig-relay',
      ttlSeconds: 3600,
      skewSeconds: 30,
      challengeSeconds: 120,
    });
    const keysRead = loadConfig(SESSION_ENV).session.keys;
    expect(keysRead.map((key) => [key.kid, Buffer.from(key.secret).toString('hex')])).to.deep.equal([
      ['k1', KEY_1.secret.toString('hex')],
      ['k0', KEY_0.secret.toString('hex')],
    ]);
    // base64url secrets are read too.
    const url = `k2:${Buffer.alloc(32, 0xfb).toString('base64url')}`;
    expect(Buffer.from(loadConfig({ SESSION_KEYS: url }).session.keys[0]!.secret)).to.deep.equal(
      Buffer.alloc(32, 0xfb),
    );
  });

  const secret = Buffer.alloc(31, 7).toString('base64');
  for (const [env, message] of [
    [
      { SESSION_KEYS: `k1:${secret}` },
      'SESSION_KEYS key "k1": its secret must be base64 or base64url of at least 32 bytes',
    ],
    [
      { SESSION_KEYS: `${keysVariable(KEY_1)},${keysVariable(KEY_1)}` },
      'SESSION_KEYS names the key id "k1" twice',
    ],
    [{ SESSION_KEYS: `k 1:${KEY_1.secret.toString('base64')}` }, 'SESSION_KEYS entry 1: a key id is 1 to 16'],
    [{ SESSION_KEYS: KEY_1.secret.toString('base64') }, 'SESSION_KEYS entry 1'],
    [{ AUTH_READS: 'required' }, 'AUTH_READS=required needs SESSION_KEYS'],
    [{ AUTH_READS: 'closed' }, 'AUTH_READS must be one of open, required'],
    [{ SESSION_AUDIENCE: 'a b' }, 'SESSION_AUDIENCE must be 1 to 100 of'],
    [{ SESSION_TTL_SECONDS: '59' }, 'SESSION_TTL_SECONDS must be an integer from 60 to 86400'],
    [{ SESSION_CLOCK_SKEW_SECONDS: '301' }, 'SESSION_CLOCK_SKEW_SECONDS must be an integer from 0 to 300'],
    [{ SESSION_CHALLENGE_SECONDS: '9' }, 'SESSION_CHALLENGE_SECONDS must be an integer from 10 to 600'],
  ] as const) {
    it(`refuses ${Object.keys(env).join(', ')}: ${message}`, () => {
      expect(() => loadConfig(env)).to.throw(ConfigError, message);
    });
  }

  it('a short secret stops start-up with one line naming the variable, never the secret (exit code 2)', async () => {
    const run = await runNode(['src/main.ts'], testEnv({ SESSION_KEYS: `k1:${secret}` }));
    expect(run.code).to.equal(2);
    expect(run.stderr).to.equal(
      'multisig-relay: invalid configuration: SESSION_KEYS key "k1": its secret must be base64 or base64url of at least 32 bytes\n',
    );
    expect(run.stdout + run.stderr).not.to.include(secret);
  });
});

describe('sessions: challenge and exchange', () => {
  let api: TestApi;
  let off: TestApi;
  before(async () => {
    api = await startTestApi(SESSION_ENV);
    off = await startTestApi();
  });
  after(async () => {
    await api.stop();
    await off.stop();
  });

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
    const wallet = await challengeFor(api.url, { walletIdentity: pair.walletIdentity });
    expect(await redis().get(keys.sessionChallenge(pair.walletIdentity, wallet))).to.equal('wallet:wallet');
  });

  for (const [label, body] of [
    ['both subjects', { wkIdentity: PAIR.wkIdentity, side: 'key', walletIdentity: PAIR.walletIdentity }],
    ['neither', {}],
    ['side with walletIdentity', { walletIdentity: PAIR.walletIdentity, side: 'wallet' }],
    ['wkIdentity without side', { wkIdentity: PAIR.wkIdentity }],
    ['another side', { wkIdentity: PAIR.wkIdentity, side: 'both' }],
    ['a bad identity', { wkIdentity: 'a/b', side: 'key' }],
  ] as const) {
    it(`a challenge for ${label}: 400 INVALID_PARAMETER, nothing stored`, async () => {
      const before = await snapshot();
      expectRefused(await post(api.url, '/v1/session/challenge', body), 400, 'INVALID_PARAMETER');
      expect(await snapshot()).to.deep.equal(before);
    });
  }

  it('without SESSION_KEYS every session route is 503 UNAVAILABLE, and a read with a token is refused', async () => {
    const challenge = randomBytes(32).toString('hex');
    for (const [path, body] of [
      ['/v1/session/challenge', { wkIdentity: PAIR.wkIdentity, side: 'key' }],
      ['/v1/session', pairExchange(PAIR, 'key', challenge)],
      ['/v1/session/revoke', { wkIdentity: PAIR.wkIdentity, side: 'key' }],
    ] as const) {
      expectRefused(await post(off.url, path, body), 503, 'UNAVAILABLE');
    }
    const token = await tokenOf(claimsOf(PAIR, 'key'));
    expectReadRefused(
      await get(off.url, `/v1/action/${PAIR.wkIdentity}`, bearer(token)),
      'AUTH_INVALID',
      '/headers/authorization',
    );
  });

  it('exchanges a signed challenge once for a token of the pair side; the token is stored nowhere', async () => {
    const pair = freshPair(0x12);
    const challenge = await challengeFor(api.url, { wkIdentity: pair.wkIdentity, side: 'wallet' });
    const issued = await metric('relay_sessions_total', { kind: 'pair', outcome: 'issued' });
    const res = await post(api.url, '/v1/session', pairExchange(pair, 'wallet', challenge));
    expect(res.status, res.text).to.equal(200);
    const data = res.body.data;
    expect(Object.keys(data)).to.deep.equal([
      'token',
      'tokenType',
      'expiresAt',
      'expiresIn',
      'wkIdentity',
      'side',
    ]);
    expect(data).to.include({
      tokenType: 'Bearer',
      expiresIn: 3600,
      wkIdentity: pair.wkIdentity,
      side: 'wallet',
    });
    expect(data.token.length).to.be.at.most(1024);
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
    expect(data.expiresAt).to.equal(new Date(claims.exp * 1000).toISOString());
    expect(claims.jti).to.match(/^[A-Za-z0-9_-]{22}$/);
    expect(await redis().get(keys.sessionChallenge(pair.wkIdentity, challenge))).to.equal('used');
    expect(await metric('relay_sessions_total', { kind: 'pair', outcome: 'issued' })).to.equal(issued + 1);
    // Neither the token, nor the challenge, nor the identity reaches a log line.
    const logged = JSON.stringify(api.logs);
    for (const secretish of [data.token, challenge, pair.wkIdentity])
      expect(logged).not.to.include(secretish);
    expect(api.logs.filter((line) => line.msg === 'session issued').at(-1)).to.include({
      kind: 'pair',
      kid: 'k1',
    });
    // Either key may claim either side.
    const byKey = await challengeFor(api.url, { wkIdentity: pair.wkIdentity, side: 'wallet' });
    expect(
      (await post(api.url, '/v1/session', pairExchange(pair, 'wallet', byKey, { by: 'key' }))).status,
    ).to.equal(200);
  });

  it('a wallet alone: signed by the key behind its walletIdentity (mainnet or testnet), reads its pairing record', async () => {
    for (const pair of [PAIR, pairOf(Buffer.alloc(32, 0x16), Buffer.alloc(32, 0x17), 'tb')]) {
      const challenge = await challengeFor(api.url, { walletIdentity: pair.walletIdentity });
      const res = await post(
        api.url,
        '/v1/session',
        walletExchange(pair.walletIdentity, pair.walletPrivate, challenge),
      );
      expect(res.status, res.text).to.equal(200);
      expect(res.body.data).to.include({ walletIdentity: pair.walletIdentity, side: 'wallet' });
      expect(res.body.data).not.to.have.property('wkIdentity');
      const read = await get(api.url, `/v1/sync/${pair.walletIdentity}`, bearer(res.body.data.token));
      expectRefused(read, 404, 'NOT_FOUND');
    }
  });

  describe('refusals: 401 naming the field, the challenge left as it was', () => {
    const pair = freshPair(0x20);
    const subject = { wkIdentity: pair.wkIdentity, side: 'key' };
    let challenge: string;
    beforeEach(async () => {
      challenge = await challengeFor(api.url, subject);
    });

    const cases: [string, () => Record<string, unknown>, string, string][] = [
      ['no signature', () => ({ ...subject, challenge }), 'AUTH_INVALID', '/body/signature'],
      [
        'a pair without witnessScript',
        () => {
          const { witnessScript: _dropped, ...rest } = pairExchange(pair, 'key', challenge);
          return rest;
        },
        'AUTH_INVALID',
        '/body/witnessScript',
      ],
      [
        'signed for another purpose',
        () => pairExchange(pair, 'key', challenge, { purpose: 'action' }),
        'AUTH_INVALID',
        '/body/message/action',
      ],
      [
        'a message out of the window',
        () => pairExchange(pair, 'key', challenge, { timestamp: Date.now() - 3_600_000 }),
        'AUTH_EXPIRED',
        '/body/message/timestamp',
      ],
      [
        'another pair’s script',
        () => ({ ...pairExchange(pair, 'key', challenge), witnessScript: OTHER_PAIR.witnessScript }),
        'AUTH_INVALID',
        '/body/witnessScript',
      ],
      [
        'a stranger’s signature',
        () =>
          signed(
            { ...subject, challenge },
            { purpose: 'session', pair, privateKey: STRANGER_PRIVATE, nonce: challenge },
          ),
        'AUTH_INVALID',
        '/body/signature',
      ],
      [
        'a nonce that is not the challenge',
        () => pairExchange(pair, 'key', challenge, { nonce: 'cd'.repeat(32) }),
        'AUTH_INVALID',
        '/body/message/nonce',
      ],
      [
        'a body that is not the one signed',
        () => ({ ...pairExchange(pair, 'key', challenge), side: 'wallet' }),
        'AUTH_INVALID',
        '/body/message/data',
      ],
    ];
    for (const [label, body, code, field] of cases) {
      it(`${label}: ${code} ${field}`, async () => {
        const before = await snapshot(pair);
        expectRefused(await post(api.url, '/v1/session', body()), 401, code, field);
        expect(await snapshot(pair)).to.deep.equal(before);
        expect(await redis().get(keys.sessionChallenge(pair.wkIdentity, challenge))).to.equal('pair:key');
      });
    }

    it('a challenge for the other side (same pair): AUTH_INVALID /body/challenge', async () => {
      const before = await snapshot(pair);
      const body = pairExchange(pair, 'wallet', challenge);
      expectRefused(await post(api.url, '/v1/session', body), 401, 'AUTH_INVALID', '/body/challenge');
      expect(await snapshot(pair)).to.deep.equal(before);
    });

    it('a challenge of another pair: AUTH_INVALID /body/challenge', async () => {
      const other = freshPair(0x22);
      const before = await snapshot(pair);
      const body = pairExchange(other, 'key', challenge);
      expectRefused(await post(api.url, '/v1/session', body), 401, 'AUTH_INVALID', '/body/challenge');
      expect(await snapshot(pair)).to.deep.equal(before);
    });

    it('a pair challenge exchanged as a wallet’s (another kind): AUTH_INVALID /body/challenge', async () => {
      const before = await snapshot(pair);
      const body = walletExchange(pair.walletIdentity, pair.walletPrivate, challenge);
      expectRefused(await post(api.url, '/v1/session', body), 401, 'AUTH_INVALID', '/body/challenge');
      expect(await snapshot(pair)).to.deep.equal(before);
    });

    it('a challenge never issued, or expired: AUTH_EXPIRED /body/challenge', async () => {
      const never = randomBytes(32).toString('hex');
      expectRefused(
        await post(api.url, '/v1/session', pairExchange(pair, 'key', never)),
        401,
        'AUTH_EXPIRED',
        '/body/challenge',
      );
      await redis().del(keys.sessionChallenge(pair.wkIdentity, challenge));
      expectRefused(
        await post(api.url, '/v1/session', pairExchange(pair, 'key', challenge)),
        401,
        'AUTH_EXPIRED',
        '/body/challenge',
      );
    });

    it('a challenge exchanged twice: AUTH_REPLAYED /body/challenge', async () => {
      expect((await post(api.url, '/v1/session', pairExchange(pair, 'key', challenge))).status).to.equal(200);
      const refused = await metric('relay_sessions_total', { kind: 'pair', outcome: 'refused_used' });
      expectRefused(
        await post(api.url, '/v1/session', pairExchange(pair, 'key', challenge)),
        401,
        'AUTH_REPLAYED',
        '/body/challenge',
      );
      expect(await metric('relay_sessions_total', { kind: 'pair', outcome: 'refused_used' })).to.equal(
        refused + 1,
      );
      expect(await redis().get(keys.sessionChallenge(pair.wkIdentity, challenge))).to.equal('used');
    });

    it('a wallet alone signed by another key than its walletIdentity’s: AUTH_INVALID /body/publicKey', async () => {
      const walletChallenge = await challengeFor(api.url, { walletIdentity: pair.walletIdentity });
      const before = await snapshot(pair);
      const body = walletExchange(pair.walletIdentity, pair.keyPrivate, walletChallenge);
      expectRefused(await post(api.url, '/v1/session', body), 401, 'AUTH_INVALID', '/body/publicKey');
      expect(await snapshot(pair)).to.deep.equal(before);
    });
  });
});

describe('sessions: checking a token', () => {
  let api: TestApi;
  const pair = freshPair(0x30);
  before(async () => {
    api = await startTestApi(SESSION_ENV);
  });
  // Each test starts on an empty Redis.
  beforeEach(async () => {
    expect((await post(api.url, '/v1/action', tx(pair))).status).to.equal(200);
  });
  after(() => api.stop());

  const read = (headers: Record<string, string>) => get(api.url, `/v1/action/${pair.wkIdentity}`, headers);
  const now = () => Math.floor(Date.now() / 1000);
  const swapPart = (token: string, index: number, part: string) =>
    token
      .split('.')
      .map((p, i) => (i === index ? part : p))
      .join('.');
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

  const rows: [string, () => Promise<string>, string][] = [
    ['not a JWT', async () => 'abc', 'AUTH_INVALID'],
    ['empty', async () => '', 'AUTH_INVALID'],
    [
      'over 1,024 characters',
      async () => tokenOf(claimsOf(pair, 'key', { pad: 'x'.repeat(1024) })),
      'AUTH_INVALID',
    ],
    [
      'alg none',
      async () => `${encode({ alg: 'none', typ: 'JWT' })}.${encode(claimsOf(pair, 'key'))}.`,
      'AUTH_INVALID',
    ],
    [
      'alg RS256',
      async () =>
        swapPart(await tokenOf(claimsOf(pair, 'key')), 0, encode({ alg: 'RS256', typ: 'JWT', kid: 'k1' })),
      'AUTH_INVALID',
    ],
    [
      'an unknown kid',
      async () => tokenOf(claimsOf(pair, 'key'), { kid: 'k9', secret: KEY_1.secret }),
      'AUTH_INVALID',
    ],
    [
      'a kid signed with another secret',
      async () => tokenOf(claimsOf(pair, 'key'), { kid: 'k1', secret: KEY_0.secret }),
      'AUTH_INVALID',
    ],
    [
      'a tampered payload',
      async () => swapPart(await tokenOf(claimsOf(pair, 'key')), 1, encode(claimsOf(pair, 'wallet'))),
      'AUTH_INVALID',
    ],
    [
      'a tampered signature',
      async () => {
        const token = await tokenOf(claimsOf(pair, 'key'));
        const signature = Buffer.from(token.split('.')[2]!, 'base64url');
        signature.writeUInt8(signature[0]! ^ 1, 0);
        return swapPart(token, 2, signature.toString('base64url'));
      },
      'AUTH_INVALID',
    ],
    ['another audience', async () => tokenOf(claimsOf(pair, 'key', { aud: 'staging' })), 'AUTH_INVALID'],
    ['a claim of the wrong type', async () => tokenOf(claimsOf(pair, 'key', { rev: '0' })), 'AUTH_INVALID'],
    ['a missing claim', async () => tokenOf({ ...claimsOf(pair, 'key'), pin: undefined }), 'AUTH_INVALID'],
    [
      'expired (past the skew)',
      async () => tokenOf(claimsOf(pair, 'key', { iat: now() - 7200, exp: now() - 60 })),
      'AUTH_EXPIRED',
    ],
    [
      'not yet valid (issued past the skew)',
      async () => tokenOf(claimsOf(pair, 'key', { iat: now() + 120, exp: now() + 3720 })),
      'AUTH_INVALID',
    ],
    ['another pair’s', async () => tokenOf(claimsOf(OTHER_PAIR, 'key')), 'AUTH_INVALID'],
    [
      'a wallet’s (another kind)',
      async () => tokenOf(claimsOf(pair, 'wallet', { kind: 'wallet' })),
      'AUTH_INVALID',
    ],
  ];
  for (const [label, token, code] of rows) {
    it(`a read with a token ${label}: 401 ${code} /headers/authorization, WWW-Authenticate: Bearer`, async () => {
      const outcome = code === 'AUTH_EXPIRED' ? 'expired' : 'invalid';
      const counted = await metric('relay_token_checks_total', { route: 'read', outcome });
      const sent = await token();
      expectReadRefused(await read(bearer(sent)), code, '/headers/authorization');
      expect(await metric('relay_token_checks_total', { route: 'read', outcome })).to.equal(counted + 1);
      if (sent.length > 20) expect(JSON.stringify(api.logs)).not.to.include(sent);
    });
  }

  it('within the skew, an expired token still passes; the scheme is case-insensitive; other schemes are no token', async () => {
    const token = await tokenOf(claimsOf(pair, 'key', { iat: now() - 3610, exp: now() - 10 }));
    expect((await read({ authorization: `bearer ${token}` })).status).to.equal(200);
    expect((await read({ authorization: `BEARER ${token}` })).status).to.equal(200);
    expect((await read({ authorization: 'Basic dXNlcjpwYXNz' })).status).to.equal(200);
    const refused = await tokenOf(claimsOf(pair, 'key', { iat: now() - 7200, exp: now() - 31 - 30 }));
    expectReadRefused(await read(bearer(refused)), 'AUTH_EXPIRED', '/headers/authorization');
  });

  it('the log line of a refusal carries the outcome, the reason word and the kid, nothing of the token', async () => {
    await read(bearer(await tokenOf(claimsOf(pair, 'key', { aud: 'staging' }))));
    expect(api.logs.filter((line) => line.msg === 'session token refused').at(-1)).to.include({
      route: 'read',
      outcome: 'invalid',
      reason: 'audience',
      kid: 'k1',
    });
  });

  it('a token beside the signature fields: 401 AUTH_INVALID /headers/authorization, nothing written', async () => {
    const token = await pairToken(api.url, 'wallet', pair);
    const before = await snapshot(pair);
    const body = signed(tx(pair), { purpose: 'action', pair });
    expectRefused(
      await post(api.url, '/v1/action', body, bearer(token)),
      401,
      'AUTH_INVALID',
      '/headers/authorization',
    );
    expect(await snapshot(pair)).to.deep.equal(before);
  });

  it('writes refused by their token write nothing, whatever the row', async () => {
    const before = await snapshot(pair);
    for (const [, token] of rows) {
      const res = await post(api.url, '/v1/action', tx(pair), bearer(await token()));
      expect(res.status).to.equal(401);
      expect(res.headers.get('www-authenticate')).to.equal(null);
    }
    expect(await snapshot(pair)).to.deep.equal(before);
  });

  it('Redis unreachable: a read with a token, an exchange and a challenge are 503 (fail closed)', async () => {
    const fresh = freshPair(0x34);
    const token = await pairToken(api.url, 'key', fresh);
    const challenge = await challengeFor(api.url, { wkIdentity: fresh.wkIdentity, side: 'key' });
    await testRedis().stop();
    try {
      for (const res of [
        await get(api.url, `/v1/action/${fresh.wkIdentity}`, bearer(token)),
        await post(api.url, '/v1/session', pairExchange(fresh, 'key', challenge)),
        await post(api.url, '/v1/session/challenge', { wkIdentity: fresh.wkIdentity, side: 'key' }),
      ]) {
        expectRefused(res, 503, 'UNAVAILABLE');
      }
    } finally {
      await testRedis().start();
    }
  });

  it('one MGET of the two stamps per check, none while they are fresh', async () => {
    // A pair whose stamps this pod has not read yet.
    const fresh = freshPair(0x32);
    const token = await pairToken(api.url, 'key', fresh);
    const read = (headers: Record<string, string>) => get(api.url, `/v1/action/${fresh.wkIdentity}`, headers);
    // Within a second of each other (the stamps are kept at most that long), so the second read reads none.
    const commands = await commandsDuring(async () => {
      await read(bearer(token));
      await read(bearer(token));
    });
    const mgets = commands.filter((args) => args[0]!.toLowerCase() === 'mget');
    expect(mgets.length).to.be.within(1, 2);
    expect(mgets[0]!.slice(1)).to.deep.equal([
      keys.sessionRevocation(fresh.wkIdentity, 'key'),
      keys.authPin(fresh.wkIdentity, 'key'),
    ]);
  });
});

describe('sessions: SESSION_KEYS rotation', () => {
  let both: TestApi;
  let newOnly: TestApi;
  before(async () => {
    both = await startTestApi(SESSION_ENV);
    newOnly = await startTestApi({ SESSION_KEYS: keysVariable(KEY_1) });
  });
  after(async () => {
    await both.stop();
    await newOnly.stop();
  });

  it('the first key signs, every listed key verifies; a removed key ends the tokens it signed', async () => {
    const pair = freshPair(0x40);
    const issued = await pairToken(both.url, 'key', pair);
    expect(JSON.parse(Buffer.from(issued.split('.')[0]!, 'base64url').toString()).kid).to.equal('k1');
    const old = await tokenOf(claimsOf(pair, 'key'), KEY_0);
    const path = `/v1/recoverypub/${pair.wkIdentity}`;
    for (const token of [issued, old])
      expectRefused(await get(both.url, path, bearer(token)), 404, 'NOT_FOUND');
    expectRefused(await get(newOnly.url, path, bearer(issued)), 404, 'NOT_FOUND');
    expectReadRefused(await get(newOnly.url, path, bearer(old)), 'AUTH_INVALID', '/headers/authorization');
  });
});

describe('sessions: AUTH_READS', () => {
  let open: TestApi;
  let required: TestApi;
  const sockets: Socket[] = [];
  const pair = freshPair(0x50);
  before(async () => {
    open = await startTestApi(SESSION_ENV);
    required = await startTestApi({ ...SESSION_ENV, AUTH_READS: 'required' });
  });
  beforeEach(async () => {
    expect((await post(open.url, '/v1/action', tx(pair))).status).to.equal(200);
  });
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.close();
  });
  after(async () => {
    await open.stop();
    await required.stop();
  });

  it('required: each read without a token is 401 AUTH_REQUIRED with WWW-Authenticate; with a fitting token it is answered', async () => {
    const pairTokenKey = await pairToken(required.url, 'key', pair);
    const wallet = await walletToken(required.url, pair);
    const counted = await metric('relay_token_checks_total', { route: 'read', outcome: 'required' });
    for (const [path, token] of [
      [`/v1/action/${pair.wkIdentity}`, pairTokenKey],
      [`/v1/recoverypub/${pair.wkIdentity}`, pairTokenKey],
      [`/v1/presence/${pair.wkIdentity}`, pairTokenKey],
      [`/v1/sync/${pair.walletIdentity}`, wallet],
    ] as const) {
      expectReadRefused(await get(required.url, path), 'AUTH_REQUIRED');
      const answered = await get(required.url, path, bearer(token));
      expect(answered.status, answered.text).to.be.oneOf([200, 404]);
    }
    expect(await metric('relay_token_checks_total', { route: 'read', outcome: 'required' })).to.equal(
      counted + 4,
    );
    const res = await get(required.url, `/v1/action/${pair.wkIdentity}`, bearer(pairTokenKey));
    expect(res.body.data).to.include({ wkIdentity: pair.wkIdentity, action: 'tx' });
    // A pair's token does not read a pairing record, nor a wallet's a mailbox.
    expectReadRefused(
      await get(required.url, `/v1/sync/${pair.walletIdentity}`, bearer(pairTokenKey)),
      'AUTH_INVALID',
    );
    expectReadRefused(
      await get(required.url, `/v1/action/${pair.wkIdentity}`, bearer(wallet)),
      'AUTH_INVALID',
    );
  });

  it('required: the conditional poll needs the token too; with it, an unchanged record is 304', async () => {
    const token = await pairToken(required.url, 'wallet', pair);
    const path = `/v1/action/${pair.wkIdentity}`;
    const first = await get(required.url, path, bearer(token));
    expect(first.status).to.equal(200);
    const tag = first.headers.get('etag')!;
    expectReadRefused(await get(required.url, path, { 'if-none-match': tag }), 'AUTH_REQUIRED');
    const again = await get(required.url, path, { ...bearer(token), 'if-none-match': tag });
    expect(again.status).to.equal(304);
    expect(again.text).to.equal('');
  });

  it('required: what sessions do not cover stays open (nonce status, services, health, the session routes)', async () => {
    expect((await get(required.url, `/v1/nonces/status/${pair.wkIdentity}`)).status).to.equal(200);
    expect((await get(required.url, '/v1/services')).status).to.equal(200);
    expect((await get(required.url, '/healthz')).status).to.equal(200);
    expect(
      (await post(required.url, '/v1/session/challenge', { wkIdentity: pair.wkIdentity, side: 'key' }))
        .status,
    ).to.equal(200);
  });

  it('open: a read without a token is answered as without sessions; a failing token is still refused', async () => {
    const res = await get(open.url, `/v1/action/${pair.wkIdentity}`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('www-authenticate')).to.equal(null);
    expectReadRefused(await get(open.url, `/v1/action/${pair.wkIdentity}`, bearer('x.y.z')), 'AUTH_INVALID');
  });

  it('joins: a token of the path’s side joins under both values; none is refused under required', async () => {
    for (const api of [open, required]) {
      const token = await pairToken(api.url, 'key', pair);
      const joined = await joinOnce(api.url, 'key', { wkIdentity: pair.wkIdentity, token }, sockets);
      expect(joined.answer).to.include({ ok: true });
      expect(joined.disconnects).to.deep.equal([]);
      // Joined the pair's room: the pending request is replayed to the key.
      await waitFor('the replayed request', () => joined.received.length > 0);
      expect(
        joined.received.map(({ event, data }) => [event, (data as { wkIdentity: string }).wkIdentity]),
      ).to.deep.equal([['tx', pair.wkIdentity]]);
    }
    const unsigned = await joinOnce(required.url, 'key', { wkIdentity: pair.wkIdentity }, sockets);
    expect(unsigned.answer).to.deep.equal({ ok: false, code: 'AUTH_REQUIRED' });
    expect(unsigned.disconnects).to.deep.equal(['io server disconnect']);
    const signedJoin = signed({ wkIdentity: pair.wkIdentity }, { purpose: 'join', pair, by: 'key' });
    expect((await joinOnce(required.url, 'key', signedJoin, sockets)).answer).to.include({ ok: true });
    expect((await joinOnce(open.url, 'key', { wkIdentity: pair.wkIdentity }, sockets)).answer).to.include({
      ok: true,
    });
  });

  it('joins: a token of the other side, another pair, a bad one, or beside the signature fields is refused and disconnected', async () => {
    const wallet = await pairToken(open.url, 'wallet', pair);
    const other = await pairToken(open.url, 'key', OTHER_PAIR);
    const key = await pairToken(open.url, 'key', pair);
    for (const [data, code] of [
      [{ wkIdentity: pair.wkIdentity, token: wallet }, 'AUTH_INVALID'],
      [{ wkIdentity: pair.wkIdentity, token: other }, 'AUTH_INVALID'],
      [{ wkIdentity: pair.wkIdentity, token: 'abc' }, 'AUTH_INVALID'],
      [{ wkIdentity: pair.wkIdentity, token: 42 }, 'AUTH_INVALID'],
      [
        { wkIdentity: pair.wkIdentity, token: await tokenOf(claimsOf(pair, 'key', { iat: 1, exp: 2 })) },
        'AUTH_EXPIRED',
      ],
      [
        { ...signed({ wkIdentity: pair.wkIdentity }, { purpose: 'join', pair, by: 'key' }), token: key },
        'AUTH_INVALID',
      ],
    ] as const) {
      const refused = await joinOnce(open.url, 'key', data, sockets);
      expect(refused.answer, JSON.stringify(data)).to.deep.equal({ ok: false, code });
      expect(refused.disconnects).to.deep.equal(['io server disconnect']);
    }
    expect(await metric('relay_token_checks_total', { route: 'join', outcome: 'invalid' })).to.be.at.least(4);
  });
});

describe('sessions: writes with a token', () => {
  let api: TestApi;
  let required: TestApi;
  let off: TestApi;
  before(async () => {
    api = await startTestApi({ ...SESSION_ENV, AUTH_PIN_DAYS: '2' });
    required = await startTestApi({ ...SESSION_ENV, AUTH_ROUTES: 'action=required,token=required' });
    off = await startTestApi({ ...SESSION_ENV, AUTH_ROUTES: 'action=off,token=off' });
  });
  after(async () => {
    await api.stop();
    await required.stop();
    await off.stop();
  });

  it('POST /v1/action: the sender side’s token is a credential where writes are required, and spends no nonce', async () => {
    const pair = freshPair(0x60);
    const wallet = await pairToken(required.url, 'wallet', pair);
    expectRefused(await post(required.url, '/v1/action', tx(pair)), 401, 'AUTH_REQUIRED');
    const first = await post(required.url, '/v1/action', tx(pair), bearer(wallet));
    expect(first.status, first.text).to.equal(200);
    // A resend with a token is a new write.
    const second = await post(required.url, '/v1/action', tx(pair), bearer(wallet));
    expect(second.status).to.equal(200);
    expect(second.body.data.id).not.to.equal(first.body.data.id);
    expect(await redis().keys(`relay:authnonce:{${pair.wkIdentity}}:*`)).to.deep.equal([]);
    // A request to the key is sent by the wallet: the key side's token does not fit it; a reply is the key's.
    const key = await pairToken(required.url, 'key', pair);
    const before = await snapshot(pair);
    expectRefused(
      await post(required.url, '/v1/action', tx(pair), bearer(key)),
      401,
      'AUTH_INVALID',
      '/headers/authorization',
    );
    expect(await snapshot(pair)).to.deep.equal(before);
    expect((await post(required.url, '/v1/action', txid(pair), bearer(key))).status).to.equal(200);
    // A type the table does not know: either side.
    const unknown = { ...tx(pair), action: 'customtype' };
    expect((await post(required.url, '/v1/action', unknown, bearer(key))).status).to.equal(200);
    expect((await post(required.url, '/v1/action', unknown, bearer(wallet))).status).to.equal(200);
  });

  it('POST /v1/token: the token of the side of the push token given; both sides at once fit no token', async () => {
    const pair = freshPair(0x62);
    const key = await pairToken(required.url, 'key', pair);
    const registered = await post(
      required.url,
      '/v1/token',
      { wkIdentity: pair.wkIdentity, keyToken: 'kt' },
      bearer(key),
    );
    expect(registered.status, registered.text).to.equal(200);
    expect(await redis().zrange(keys.tokens(pair.wkIdentity, 'key'), 0, -1)).to.deep.equal(['kt']);
    for (const body of [
      { wkIdentity: pair.wkIdentity, walletToken: 'wt' },
      { wkIdentity: pair.wkIdentity, keyToken: 'kt2', walletToken: 'wt' },
    ]) {
      expectRefused(
        await post(required.url, '/v1/token', body, bearer(key)),
        401,
        'AUTH_INVALID',
        '/headers/authorization',
      );
    }
    expect(await redis().exists(keys.tokens(pair.wkIdentity, 'wallet'))).to.equal(0);
    expect(await redis().zrange(keys.tokens(pair.wkIdentity, 'key'), 0, -1)).to.deep.equal(['kt']);
  });

  it('pins: a token write pins its side as a signed one does, and passes the pin; a pinned side’s unsigned write is refused', async () => {
    const pair = freshPair(0x64);
    const wallet = await pairToken(api.url, 'wallet', pair);
    expect((await post(api.url, '/v1/action', tx(pair), bearer(wallet))).status).to.equal(200);
    const pin = await redis().get(keys.authPin(pair.wkIdentity, 'wallet'));
    expect(Number(pin)).to.be.within(Date.now() - 60_000, Date.now());
    expect(await redis().ttl(keys.authPin(pair.wkIdentity, 'wallet'))).to.be.within(
      2 * 86_400 - 5,
      2 * 86_400,
    );
    expectRefused(await post(api.url, '/v1/action', tx(pair)), 401, 'AUTH_REQUIRED');
    expect((await post(api.url, '/v1/action', tx(pair), bearer(wallet))).status).to.equal(200);
    // A renewal keeps the pin's creation time, so the token issued before it stays valid.
    expect(
      (await post(api.url, '/v1/action', signed(tx(pair), { purpose: 'action', pair }))).status,
    ).to.equal(200);
    expect(await redis().get(keys.authPin(pair.wkIdentity, 'wallet'))).to.equal(pin);
    expect((await post(api.url, '/v1/action', tx(pair), bearer(wallet))).status).to.equal(200);
  });

  it('the pending request is the pair’s: a request a token stored is not replaced by an unsigned exempt type', async () => {
    const pair = freshPair(0x66);
    const wallet = await pairToken(api.url, 'wallet', pair);
    expect((await post(api.url, '/v1/action', tx(pair), bearer(wallet))).status).to.equal(200);
    const recovery = { chain: 'btc', wkIdentity: pair.wkIdentity, action: 'recoveryrequest', payload: 'ab' };
    expectRefused(await post(api.url, '/v1/action', recovery), 409, 'CONFLICT');
    expect(JSON.parse((await redis().get(keys.action(pair.wkIdentity)))!).action).to.equal('tx');
  });

  it('a write route turned off ignores the header, even a bad token', async () => {
    const pair = freshPair(0x68);
    expect((await post(off.url, '/v1/action', tx(pair), bearer('abc'))).status).to.equal(200);
    expect(
      (await post(off.url, '/v1/token', { wkIdentity: pair.wkIdentity, keyToken: 'k' }, bearer('abc')))
        .status,
    ).to.equal(200);
  });
});

describe('sessions: what stays for the released apps', () => {
  for (const profile of ['standard', 'ssp-apps']) {
    it(`API_PROFILE=${profile}, AUTH_READS=open: requests without a token are answered as by a relay without sessions`, async () => {
      const withSessions = await startTestApi({ ...SESSION_ENV, API_PROFILE: profile });
      const without = await startTestApi({ API_PROFILE: profile });
      try {
        const pair = freshPair(0x70);
        const sync = {
          chain: 'btc',
          walletIdentity: pair.walletIdentity,
          keyXpub: 'xpub-of-the-key',
          wkIdentity: pair.wkIdentity,
        };
        expect((await post(without.url, '/v1/sync', sync)).status).to.equal(200);
        expect((await post(without.url, '/v1/action', tx(pair))).status).to.equal(200);
        for (const path of [
          `/v1/action/${pair.wkIdentity}`,
          `/v1/sync/${pair.walletIdentity}`,
          `/v1/recoverypub/${pair.wkIdentity}`,
          '/v1/action/a%2Fb',
        ]) {
          const [a, b] = [await get(withSessions.url, path), await get(without.url, path)];
          expect(
            [a.status, a.headers.get('content-type'), a.headers.get('www-authenticate')],
            path,
          ).to.deep.equal([b.status, b.headers.get('content-type'), null]);
          // The answers differ only by their request id.
          const requestId = /"requestId":"[^"]+"/;
          expect(a.text.replace(requestId, ''), path).to.equal(b.text.replace(requestId, ''));
        }
      } finally {
        await withSessions.stop();
        await without.stop();
      }
    });
  }
});
