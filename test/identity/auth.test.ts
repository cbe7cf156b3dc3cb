import { expect } from 'chai';
import { AuthGate } from '../../src/identity/gate.js';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/core/config/config.js';
import type { AppError } from '../../src/core/errors.js';
import { createLogger } from '../../src/core/log.js';
import { createRedis, type RedisClient } from '../../src/core/redis/clients.js';
import { AuthStore } from '../../src/identity/store.js';
import type { SignatureVerifier } from '../../src/identity/signature.js';
import { WriteAck } from '../../src/core/redis/write-ack.js';
import { registry } from '../../src/core/metrics.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { errorBody, get, post, startTestApi, testEnv, type Reply, type TestApi } from '../helpers/api.js';
import { runNode } from '../helpers/child.js';
import { parsePrometheus, valueOf } from '../helpers/prometheus.js';
import { redis, testRedis, testTopology } from '../helpers/redis.js';
import {
  OTHER_PAIR,
  PAIR,
  STRANGER_PRIVATE,
  pairOf,
  publicKeyOf,
  signed,
  type Pair,
  type SignOptions,
  VECTOR,
  VECTOR_REQUEST,
  vectorBody,
} from '../helpers/signing.js';
import {
  connectClient,
  connected,
  dataOf,
  joinsHandled,
  joinsSettled,
  type TestClient,
} from '../helpers/sockets.js';
import { VERIFIER_PATHS, verifierFor } from '../helpers/verifiers.js';
import { waitFor } from '../helpers/wait.js';
import { FakeFcm } from '../helpers/fake-fcm.js';
import { startTestWorker } from '../helpers/worker.js';

const keys = keysFor('relay:');
const silent = createLogger('error', {}, () => {});
const tx = (pair: Pair = PAIR, payload = 'deadbeef') => ({
  action: 'tx',
  payload,
  chain: 'btc',
  path: '0-0',
  wkIdentity: pair.wkIdentity,
  utxos: [],
});
const txid = (pair: Pair = PAIR) => ({
  chain: 'btc',
  wkIdentity: pair.wkIdentity,
  action: 'txid',
  payload: 'ab'.repeat(32),
});
const signedAction = (body: object, options: Partial<SignOptions> = {}) =>
  signed(body, { purpose: 'action', ...options });
const nonceOf = (body: { message: string }) => JSON.parse(body.message).nonce as string;
/** A pair of its own per test, from two fixed private keys. */
const freshPair = (seed: number) => pairOf(Buffer.alloc(32, seed), Buffer.alloc(32, seed + 1));

async function metric(name: string, labels: Record<string, string>): Promise<number> {
  return valueOf(parsePrometheus(await registry.metrics()), name, labels);
}

function expectRefused(res: Reply, code: string, field?: string) {
  expect(res.status, res.text).to.equal(401);
  expect(res.body).to.deep.equal(errorBody(res, code));
  if (field) expect(res.body.error.details.map((d: { field: string }) => d.field)).to.deep.equal([field]);
}

const CREDENTIAL = ['signature', 'message', 'publicKey', 'witnessScript'];

describe('identity-signed requests: configuration', () => {
  it('SIGNATURE_VERIFIER: auto unless set to one of the two paths', () => {
    expect(loadConfig({}).auth.signatureVerifier).to.equal('auto');
    for (const path of VERIFIER_PATHS) {
      expect(loadConfig({ SIGNATURE_VERIFIER: path }).auth.signatureVerifier).to.equal(path);
    }
    expect(() => loadConfig({ SIGNATURE_VERIFIER: 'elliptic' })).to.throw(ConfigError, 'SIGNATURE_VERIFIER');
  });

  it('AUTH_ROUTES overrides AUTH_MODE per route', () => {
    const config = loadConfig({
      AUTH_MODE: 'off',
      AUTH_ROUTES: 'action=required, token=required,join=optional',
      AUTH_PIN_DAYS: '30',
      AUTH_UNSIGNED_ACTIONS: 'recoveryrequest,chainsyncrequest',
    });
    expect(config.auth).to.deep.equal({
      modes: { action: 'required', token: 'required', sync: 'off', join: 'optional', ack: 'required' },
      windowSeconds: 600,
      pinDays: 30,
      pinJoins: false,
      unsignedActions: ['recoveryrequest', 'chainsyncrequest'],
      signatureVerifier: 'auto',
    });
    expect(loadConfig({}).auth.modes).to.deep.equal({
      action: 'optional',
      token: 'optional',
      sync: 'optional',
      join: 'optional',
      ack: 'required',
    });
    expect(loadConfig({}).auth.unsignedActions).to.deep.equal(['recoveryrequest']);
    expect(loadConfig({ AUTH_UNSIGNED_ACTIONS: 'none' }).auth.unsignedActions).to.deep.equal([]);
    expect(loadConfig({}).realtime.roomsMax).to.equal(4);
    expect(loadConfig({}).push.perPairPerMinute).to.equal(6);
    expect(loadConfig({}).push.registrations.perHour).to.equal(20);
  });

  for (const [env, message] of [
    [
      { AUTH_ROUTES: 'sync=required' },
      'AUTH_ROUTES/AUTH_MODE make POST /v1/sync required, but no key app signs its sync: set sync=optional or sync=off in AUTH_ROUTES',
    ],
    [{ AUTH_MODE: 'required' }, 'AUTH_ROUTES/AUTH_MODE make POST /v1/sync required'],
    [{ AUTH_ROUTES: 'ticket=required' }, 'AUTH_ROUTES must be route=mode pairs separated by commas'],
    [{ AUTH_ROUTES: 'action=maybe' }, '(got "action=maybe")'],
    [{ AUTH_MODE: 'on' }, 'AUTH_MODE must be one of off, optional, required (got "on")'],
    [{ AUTH_WINDOW_SECONDS: '0' }, 'AUTH_WINDOW_SECONDS must be an integer from 1 to 86400'],
    [{ AUTH_PIN_JOINS: 'yes' }, 'AUTH_PIN_JOINS must be one of true, false'],
    [
      { AUTH_UNSIGNED_ACTIONS: 'recoveryrequest,recovery request' },
      'AUTH_UNSIGNED_ACTIONS names "recovery request", which is not an action type',
    ],
  ] as const) {
    it(`refuses ${JSON.stringify(env)} with one line`, () => {
      expect(() => loadConfig(env)).to.throw(ConfigError, message);
    });
  }

  it('sync=required stops start-up with one line saying why (exit code 2)', async () => {
    const run = await runNode(['src/main.ts'], testEnv({ AUTH_ROUTES: 'action=required,sync=required' }));
    expect(run.code).to.equal(2);
    expect(run.stdout).to.equal('');
    expect(run.stderr).to.equal(
      'multisig-relay: invalid configuration: AUTH_ROUTES/AUTH_MODE make POST /v1/sync required, but no key app signs its sync: set sync=optional or sync=off in AUTH_ROUTES\n',
    );
  });

  it('AUTH_MODE=required with sync=optional starts', () => {
    expect(loadConfig({ AUTH_MODE: 'required', AUTH_ROUTES: 'sync=optional' }).auth.modes.sync).to.equal(
      'optional',
    );
  });
});

for (const path of VERIFIER_PATHS) {
  describe(`identity-signed requests: the gate, the curve step on ${path}`, () => {
    let verifier: SignatureVerifier;
    let client: RedisClient;
    let store: AuthStore;
    const admission = {
      route: 'action' as const,
      location: 'body' as const,
      body: vectorBody(),
      log: silent,
    };
    before(async function () {
      verifier = verifierFor(path, this);
      client = createRedis(testTopology(), 'store');
      store = new AuthStore(client, keys, WriteAck.none);
      // A fail-fast client refuses commands until it is connected.
      await waitFor('the store client to connect', () => client.status === 'ready');
    });
    after(() => client.quit());

    it('admits the reference vector at its timestamp (clock injected) and removes the four fields', async () => {
      const gate = new AuthGate(loadConfig({}).auth, store, verifier, () => VECTOR.now);
      const { body } = await gate.admit(admission);
      expect(body).to.deep.equal(VECTOR_REQUEST);
    });

    it('refuses the reference vector today: its window is long past', async () => {
      const gate = new AuthGate(loadConfig({}).auth, store, verifier);
      const refusal = await gate.admit(admission).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refusal).to.include({ code: 'AUTH_EXPIRED', status: 401 });
      expect((refusal as AppError).details).to.deep.equal([
        { field: '/body/message/timestamp', message: 'the message is outside the time window' },
      ]);
    });
  });
}

describe('identity-signed requests: modes', () => {
  const apis: Record<string, TestApi> = {};
  before(async () => {
    for (const mode of ['off', 'optional', 'required']) {
      apis[mode] = await startTestApi({ AUTH_MODE: mode, AUTH_ROUTES: 'sync=optional' });
    }
  });
  after(async () => {
    for (const api of Object.values(apis)) await api.stop();
  });

  const partial = () => {
    const { message: _, ...rest } = signedAction(tx());
    return rest;
  };
  const forged = () => signedAction(tx(), { privateKey: STRANGER_PRIVATE });

  const table: Record<string, Record<string, [number, string?, string?]>> = {
    'no auth fields': { off: [200], optional: [200], required: [401, 'AUTH_REQUIRED'] },
    'partial credential': {
      off: [200],
      optional: [401, 'AUTH_INVALID', '/body/message'],
      required: [401, 'AUTH_INVALID', '/body/message'],
    },
    'signed, every check passes': { off: [200], optional: [200], required: [200] },
    'signed, a check fails': {
      off: [200],
      optional: [401, 'AUTH_INVALID', '/body/signature'],
      required: [401, 'AUTH_INVALID', '/body/signature'],
    },
  };
  const bodies: Record<string, () => Record<string, unknown>> = {
    'no auth fields': () => tx(),
    'partial credential': partial,
    'signed, every check passes': () => signedAction(tx()),
    'signed, a check fails': forged,
  };

  for (const [row, modes] of Object.entries(table)) {
    for (const [mode, [status, code, field]] of Object.entries(modes)) {
      it(`${row}, ${mode}: ${status}${code ? ` ${code}` : ''}`, async () => {
        const body = bodies[row]!();
        const res = await post(apis[mode]!.url, '/v1/action', body);
        if (status === 200) {
          expect(res.status, res.text).to.equal(200);
          // The fields are dropped: never stored or echoed.
          expect(Object.keys(res.body.data)).to.deep.equal([
            'id',
            'chain',
            'wkIdentity',
            'action',
            'payload',
            'path',
            'utxos',
            'createdAt',
            'expiresAt',
            'epoch',
            'offset',
          ]);
          const stored = (await redis().get(keys.action(PAIR.wkIdentity)))!;
          for (const field of CREDENTIAL) expect(stored).not.to.contain(`"${field}"`);
        } else {
          expectRefused(res, code!, field);
          expect(await redis().exists(keys.action(PAIR.wkIdentity))).to.equal(0);
        }
        const nonceKeys = await redis().keys('relay:authnonce:*');
        const spends = row === 'signed, every check passes' && mode !== 'off';
        expect(nonceKeys).to.deep.equal(
          spends ? [keys.authNonce(PAIR.wkIdentity, nonceOf(body as { message: string }))] : [],
        );
      });
    }
  }

  it('a spent nonce lives until the message leaves the window (timestamp + window + 1 s)', async () => {
    const timestamp = Date.now();
    const body = signedAction(tx(), { timestamp });
    expect((await post(apis.optional!.url, '/v1/action', body)).status).to.equal(200);
    const expiresAt = await redis().call('PEXPIRETIME', keys.authNonce(PAIR.wkIdentity, nonceOf(body)));
    // Set as a lifetime relative to the pod's clock; this machine's Redis and pod share one clock, give or take.
    expect(expiresAt).to.be.closeTo(timestamp + 600_000 + 1000, 250);
  });

  it('outcomes are counted per route; logs hold the reason, never the fields or the identity', async () => {
    const before = {
      verified: await metric('relay_auth_requests_total', { route: 'action', outcome: 'verified' }),
      unsigned: await metric('relay_auth_requests_total', { route: 'action', outcome: 'unsigned' }),
      signature: await metric('relay_auth_requests_total', { route: 'action', outcome: 'refused_signature' }),
    };
    const good = signedAction(tx());
    const bad = forged();
    await post(apis.optional!.url, '/v1/action', good);
    await post(apis.optional!.url, '/v1/action', tx());
    await post(apis.optional!.url, '/v1/action', bad);
    expect(await metric('relay_auth_requests_total', { route: 'action', outcome: 'verified' })).to.equal(
      before.verified + 1,
    );
    expect(await metric('relay_auth_requests_total', { route: 'action', outcome: 'unsigned' })).to.equal(
      before.unsigned + 1,
    );
    expect(
      await metric('relay_auth_requests_total', { route: 'action', outcome: 'refused_signature' }),
    ).to.equal(before.signature + 1);
    const logs = JSON.stringify(apis.optional!.logs);
    for (const secret of [
      good.signature,
      bad.signature,
      nonceOf(good),
      PAIR.witnessScript,
      PAIR.wkIdentity,
      publicKeyOf(PAIR.walletPrivate),
    ]) {
      expect(logs).not.to.contain(secret);
    }
    expect(apis.optional!.logs.filter((line) => line.msg === 'auth refused').at(-1)).to.include({
      route: 'action',
      reason: 'signature',
    });
  });

  it('Redis unreachable: a signed request is 503 in optional and required (fail closed), never let through', async () => {
    await testRedis().stop();
    try {
      for (const mode of ['optional', 'required']) {
        const res = await post(apis[mode]!.url, '/v1/action', signedAction(tx()));
        expect(res.status, mode).to.equal(503);
        expect(res.body).to.deep.equal(errorBody(res, 'UNAVAILABLE'));
      }
    } finally {
      await testRedis().start();
    }
  });
});

describe('identity-signed requests: replays, binding, sync and token', () => {
  let a: TestApi;
  let b: TestApi;
  before(async () => {
    a = await startTestApi();
    b = await startTestApi();
  });
  after(async () => {
    await a.stop();
    await b.stop();
  });

  it('a byte-identical resend, on the same pod or another, answers what the first stored and writes nothing', async () => {
    const body = signedAction(tx());
    const first = await post(a.url, '/v1/action', body);
    expect(first.status, first.text).to.equal(200);
    const intents = await redis().xlen(keys.pushIntents);
    const stored = await redis().get(keys.action(PAIR.wkIdentity));
    for (const api of [a, b]) {
      const resent = await post(api.url, '/v1/action', body);
      expect(resent.status, resent.text).to.equal(200);
      expect(resent.body).to.deep.equal(first.body);
    }
    expect(await redis().get(keys.action(PAIR.wkIdentity))).to.equal(stored);
    expect(await redis().xlen(keys.pushIntents)).to.equal(intents);
  });

  it('a resent token registration answers the pair’s counts as they are and registers nothing', async () => {
    const pair = freshPair(0x8b);
    const body = signed(
      { wkIdentity: pair.wkIdentity, keyToken: 'resent-token' },
      { purpose: 'token', pair, by: 'key' },
    );
    expect((await post(a.url, '/v1/token', body)).status).to.equal(200);
    const registered = await redis().zscore(keys.tokens(pair.wkIdentity, 'key'), 'resent-token');
    expect(
      (await post(a.url, '/v1/token', { wkIdentity: pair.wkIdentity, walletToken: 'other-device' })).status,
    ).to.equal(200);
    const resent = await post(b.url, '/v1/token', body);
    expect(resent.body).to.deep.equal({
      success: true,
      data: { wkIdentity: pair.wkIdentity, keyTokens: 1, walletTokens: 1 },
    });
    expect(await redis().zscore(keys.tokens(pair.wkIdentity, 'key'), 'resent-token')).to.equal(registered);
  });

  it('the same nonce under another credential is AUTH_REPLAYED, and so is a resend whose record was replaced', async () => {
    const body = signedAction(tx());
    expect((await post(a.url, '/v1/action', body)).status).to.equal(200);
    const other = signedAction(tx(PAIR, 'cafe'), { nonce: nonceOf(body) });
    expectRefused(await post(b.url, '/v1/action', other), 'AUTH_REPLAYED', '/body/message/nonce');
    expect((await post(a.url, '/v1/action', txid())).status).to.equal(200);
    expectRefused(await post(b.url, '/v1/action', body), 'AUTH_REPLAYED', '/body/message/nonce');
    expect(JSON.parse((await redis().get(keys.action(PAIR.wkIdentity)))!).action).to.equal('txid');
  });

  it('four copies raced over two pods: one record written, every 200 carries it', async () => {
    const body = signedAction(tx());
    const replies = await Promise.all([a, b, a, b].map((api) => post(api.url, '/v1/action', body)));
    const stored = JSON.parse((await redis().get(keys.action(PAIR.wkIdentity)))!);
    const accepted = replies.filter((r) => r.status === 200);
    expect(accepted.length).to.be.greaterThan(0);
    for (const res of accepted) expect(res.body.data).to.deep.equal(stored);
    // A copy that arrives while the first is still being written finds no record yet: refused as a replay.
    for (const res of replies.filter((r) => r.status !== 200)) expectRefused(res, 'AUTH_REPLAYED');
    expect(await redis().xlen(keys.pushIntents)).to.be.at.most(1);
  });

  it('a tampered copy sent first does not burn the honest nonce', async () => {
    const honest = signedAction(tx());
    expectRefused(
      await post(a.url, '/v1/action', { ...honest, payload: 'cafebabe' }),
      'AUTH_INVALID',
      '/body/message/data',
    );
    expect(await redis().exists(keys.authNonce(PAIR.wkIdentity, nonceOf(honest)))).to.equal(0);
    const res = await post(b.url, '/v1/action', honest);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data.payload).to.equal('deadbeef');
  });

  it('future and past messages are AUTH_EXPIRED; inside the window they pass', async () => {
    const now = Date.now();
    for (const timestamp of [now + 700_000, now - 700_000]) {
      expectRefused(
        await post(a.url, '/v1/action', signedAction(tx(), { timestamp })),
        'AUTH_EXPIRED',
        '/body/message/timestamp',
      );
    }
    for (const timestamp of [now + 60_000, now - 60_000]) {
      expect((await post(a.url, '/v1/action', signedAction(tx(), { timestamp }))).status).to.equal(200);
    }
  });

  it('a 503 before anything was written (WAIT saw no replica take the nonce) gives it back: the honest retry works', async () => {
    const unreplicated = await startTestApi({ REDIS_WAIT_REPLICAS: '1', REDIS_WAIT_TIMEOUT_MS: '50' });
    try {
      const body = signedAction(tx());
      const failed = await post(unreplicated.url, '/v1/action', body);
      expect(failed.status).to.equal(503);
      expect(await redis().exists(keys.authNonce(PAIR.wkIdentity, nonceOf(body)))).to.equal(0);
      expect(await redis().exists(keys.action(PAIR.wkIdentity))).to.equal(0);
      const retried = await post(a.url, '/v1/action', body);
      expect(retried.status).to.equal(200);
      expect((await post(a.url, '/v1/action', body)).body).to.deep.equal(retried.body);
    } finally {
      await unreplicated.stop();
    }
  });

  it('a write that fails after the checks (a 503: Redis refuses it, NOPERM) gives its nonce back', async () => {
    // A Redis user that may write everything the relay writes but the action mailboxes.
    const user = 'relay-no-actions';
    await redis().call(
      'ACL',
      'SETUSER',
      user,
      'on',
      '>secret',
      'resetkeys',
      '~relay:authnonce:*',
      '~relay:rl:*',
      '%R~relay:action:*',
      'resetchannels',
      '&*',
      '+@all',
    );
    const port = new URL(testRedis().url).port;
    const limited = await startTestApi({ REDIS_URL: `redis://${user}:secret@127.0.0.1:${port}` });
    try {
      const body = signedAction(tx());
      const failed = await post(limited.url, '/v1/action', body);
      expect(failed.status, failed.text).to.equal(503);
      expect(await redis().exists(keys.authNonce(PAIR.wkIdentity, nonceOf(body)))).to.equal(0);
      expect((await post(a.url, '/v1/action', body)).status).to.equal(200);
    } finally {
      await limited.stop();
      await redis().call('ACL', 'DELUSER', user);
    }
  });

  it('purpose binding: a message signed for one route is refused on every other', async () => {
    const token = { wkIdentity: PAIR.wkIdentity, keyToken: 'tok' };
    expectRefused(
      await post(a.url, '/v1/token', signed(token, { purpose: 'action' })),
      'AUTH_INVALID',
      '/body/message/action',
    );
    expectRefused(
      await post(a.url, '/v1/action', signed(tx(), { purpose: 'token' })),
      'AUTH_INVALID',
      '/body/message/action',
    );
    const res = await post(a.url, '/v1/token', signed(token, { purpose: 'token', by: 'key' }));
    expect(res.body).to.deep.equal({
      success: true,
      data: { wkIdentity: PAIR.wkIdentity, keyTokens: 1, walletTokens: 0 },
    });
  });

  it('identity binding: a pair’s signature does not carry over to another pair', async () => {
    expectRefused(
      await post(a.url, '/v1/action', signedAction(tx(OTHER_PAIR), { identity: PAIR.wkIdentity })),
      'AUTH_INVALID',
      '/body/message/identity',
    );
    // Its own script does not match the other pair's address.
    expectRefused(
      await post(a.url, '/v1/action', signedAction(tx(OTHER_PAIR), { identity: OTHER_PAIR.wkIdentity })),
      'AUTH_INVALID',
      '/body/witnessScript',
    );
    expect(await redis().exists(keys.action(OTHER_PAIR.wkIdentity))).to.equal(0);
  });

  it('a signed sync: refused for a foreign walletIdentity; for the wallet’s own, stored without the credential', async () => {
    const sync = (walletIdentity: string) => ({
      chain: 'btc',
      walletIdentity,
      keyXpub: 'xpub' + 'k'.repeat(107),
      wkIdentity: PAIR.wkIdentity,
    });
    expectRefused(
      await post(a.url, '/v1/sync', signed(sync(OTHER_PAIR.walletIdentity), { purpose: 'sync', by: 'key' })),
      'AUTH_INVALID',
      '/body/walletIdentity',
    );
    expect(await redis().exists(keys.sync(OTHER_PAIR.walletIdentity))).to.equal(0);
    const res = await post(
      a.url,
      '/v1/sync',
      signed(sync(PAIR.walletIdentity), { purpose: 'sync', by: 'key' }),
    );
    expect(res.body).to.deep.equal({ success: true, data: sync(PAIR.walletIdentity) });
    expect(JSON.parse((await redis().get(keys.sync(PAIR.walletIdentity)))!)).to.deep.equal(
      sync(PAIR.walletIdentity),
    );
  });

  it('witnessScript alone is not a credential: an unsigned sync carrying it is accepted', async () => {
    const body = {
      chain: 'btc',
      walletIdentity: 'w-unsigned',
      keyXpub: 'xpub1',
      wkIdentity: PAIR.wkIdentity,
      witnessScript: PAIR.witnessScript,
    };
    const res = await post(a.url, '/v1/sync', body);
    expect(res.status, res.text).to.equal(200);
    expect(await redis().keys('relay:authnonce:*')).to.deep.equal([]);
  });
});

describe('identity-signed requests: pins', () => {
  let api: TestApi;
  let pinJoins: TestApi;
  let off: TestApi;
  const clients: TestClient[] = [];
  before(async () => {
    const env = { AUTH_PIN_DAYS: '2', AUTH_UNSIGNED_ACTIONS: 'recoveryrequest,publicnoncesrequest' };
    api = await startTestApi(env);
    pinJoins = await startTestApi({ ...env, AUTH_PIN_JOINS: 'true' });
    off = await startTestApi();
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });
  after(async () => {
    await api.stop();
    await pinJoins.stop();
    await off.stop();
  });

  it('a verified write pins its sender’s side for AUTH_PIN_DAYS; only that side’s unsigned writes of that pair are refused', async () => {
    const pair = freshPair(0x61);
    expect((await post(api.url, '/v1/action', tx(pair))).status).to.equal(200);
    expect((await post(api.url, '/v1/action', signedAction(tx(pair), { pair }))).status).to.equal(200);
    // A request to the key is sent by the wallet.
    expect(await redis().ttl(keys.authPin(pair.wkIdentity, 'wallet'))).to.be.within(
      2 * 86_400 - 5,
      2 * 86_400,
    );
    expect(await redis().exists(keys.authPin(pair.wkIdentity, 'key'))).to.equal(0);

    const refused = await post(api.url, '/v1/action', tx(pair));
    expectRefused(refused, 'AUTH_REQUIRED');
    expect(refused.body.error.message).to.equal(
      'This side of the pair signs its requests; an unsigned one is refused.',
    );
    expectRefused(
      await post(api.url, '/v1/token', { wkIdentity: pair.wkIdentity, walletToken: 't' }),
      'AUTH_REQUIRED',
    );
    // The pending request is the pair's: an exempt type waits (409), an unknown type needs a signature (any pin).
    const pending = await redis().get(keys.action(pair.wkIdentity));
    const exempt = await post(api.url, '/v1/action', { ...tx(pair), action: 'recoveryrequest' });
    expect([exempt.status, exempt.body.error.code]).to.deep.equal([409, 'CONFLICT']);
    expectRefused(
      await post(api.url, '/v1/action', { ...tx(pair), action: 'somethingnew' }),
      'AUTH_REQUIRED',
    );
    expect(await redis().get(keys.action(pair.wkIdentity))).to.equal(pending);
    // The other side (its reply), then exempt types, another pair: unaffected.
    for (const body of [
      txid(pair),
      { ...tx(pair), action: 'recoveryrequest' },
      { ...tx(pair), action: 'publicnoncesrequest' },
      tx(freshPair(0x71)),
      { ...tx(freshPair(0x73)), action: 'somethingnew' },
    ]) {
      const res = await post(api.url, '/v1/action', body);
      expect(res.status, `${body.action}: ${res.text}`).to.equal(200);
    }
    expect(
      (await post(api.url, '/v1/token', { wkIdentity: pair.wkIdentity, keyToken: 't' })).status,
    ).to.equal(200);
    // Signed, the pinned side still writes.
    expect((await post(api.url, '/v1/action', signedAction(tx(pair), { pair }))).status).to.equal(200);
  });

  it('a reply pins the key side; a signed token registration pins the side of its token', async () => {
    const pair = freshPair(0x63);
    expect(
      (await post(api.url, '/v1/action', signedAction(txid(pair), { pair, by: 'key' }))).status,
    ).to.equal(200);
    expect(await redis().exists(keys.authPin(pair.wkIdentity, 'key'))).to.equal(1);
    const other = freshPair(0x65);
    const token = { wkIdentity: other.wkIdentity, walletToken: 'w1' };
    expect(
      (await post(api.url, '/v1/token', signed(token, { purpose: 'token', pair: other }))).status,
    ).to.equal(200);
    expect(await redis().exists(keys.authPin(other.wkIdentity, 'wallet'))).to.equal(1);
    expect(await redis().exists(keys.authPin(other.wkIdentity, 'key'))).to.equal(0);
  });

  it('a pin that expired lets unsigned writes in again; with AUTH_PIN_DAYS=0 nothing is pinned or enforced', async () => {
    const pair = freshPair(0x67);
    expect((await post(api.url, '/v1/action', signedAction(tx(pair), { pair }))).status).to.equal(200);
    expectRefused(await post(api.url, '/v1/action', tx(pair)), 'AUTH_REQUIRED');
    await redis().pexpire(keys.authPin(pair.wkIdentity, 'wallet'), 1);
    await waitFor(
      'the pin to expire',
      async () => (await redis().exists(keys.authPin(pair.wkIdentity, 'wallet'))) === 0,
    );
    expect((await post(api.url, '/v1/action', tx(pair))).status).to.equal(200);

    const unpinned = freshPair(0x69);
    expect(
      (await post(off.url, '/v1/action', signedAction(tx(unpinned), { pair: unpinned }))).status,
    ).to.equal(200);
    expect(await redis().keys('relay:authpin:*')).not.to.include(keys.authPin(unpinned.wkIdentity, 'wallet'));
    await redis().set(keys.authPin(unpinned.wkIdentity, 'wallet'), '1');
    expect((await post(off.url, '/v1/action', tx(unpinned))).status).to.equal(200);
  });

  it('joins: a signed join pins its path’s side; unsigned joins of a pinned side pass unless AUTH_PIN_JOINS=true', async () => {
    const pair = freshPair(0x6b);
    const before = await joinsHandled();
    const signedJoin = connectClient(
      api.url,
      'wallet',
      signed({ wkIdentity: pair.wkIdentity }, { purpose: 'join', pair }),
    );
    clients.push(signedJoin);
    await joinsSettled(before, 1);
    expect(await redis().exists(keys.authPin(pair.wkIdentity, 'wallet'))).to.equal(1);

    const unsigned = connectClient(api.url, 'wallet', { wkIdentity: pair.wkIdentity });
    clients.push(unsigned);
    await joinsSettled(before, 2);
    expect(unsigned.socket.connected).to.equal(true);

    const refusedBefore = await joinsHandled('unauthorized');
    const refused = connectClient(pinJoins.url, 'wallet', { wkIdentity: pair.wkIdentity });
    clients.push(refused);
    await waitFor('the unsigned join to be refused', () =>
      refused.disconnects.includes('io server disconnect'),
    );
    expect(await joinsHandled('unauthorized')).to.equal(refusedBefore + 1);
    // The key side is not pinned.
    const keySide = connectClient(pinJoins.url, 'key', { wkIdentity: pair.wkIdentity });
    clients.push(keySide);
    await joinsSettled(before, 3);
    expect(keySide.socket.connected).to.equal(true);
  });
  it('Redis unreachable with AUTH_PIN_JOINS=true: an unsigned join is not taken (its pin cannot be read); only the transport closes', async () => {
    const client = connectClient(pinJoins.url, 'wallet', undefined);
    clients.push(client);
    await connected(client);
    const unavailable = await joinsHandled('unavailable');
    await testRedis().stop();
    try {
      client.socket.emit('join', { wkIdentity: freshPair(0x6d).wkIdentity });
      await waitFor('the transport to be closed', () => client.disconnects.length > 0);
      expect(client.disconnects).to.deep.equal(['transport close']);
      expect(await joinsHandled('unavailable')).to.equal(unavailable + 1);
    } finally {
      await testRedis().start();
    }
  });
});

describe('the pending request is the pair’s', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(() => api.stop());

  const recovery = (pair: Pair) => ({ ...tx(pair), action: 'recoveryrequest' });

  it('an unsigned exempt or unknown type never replaces a verified request: 409, nothing written, no push', async () => {
    const pair = freshPair(0x81);
    const first = await post(api.url, '/v1/action', signedAction(tx(pair), { pair }));
    expect(first.status).to.equal(200);
    const intents = await redis().xlen(keys.pushIntents);
    for (const body of [recovery(pair), { ...tx(pair), action: 'somethingnew' }]) {
      const res = await post(api.url, '/v1/action', body);
      expect(res.status, body.action).to.equal(409);
      expect(res.body).to.deep.equal(
        errorBody(
          res,
          'CONFLICT',
          'A signed request of this pair is pending; send this once it is answered or has expired.',
        ),
      );
    }
    expect(JSON.parse((await redis().get(keys.action(pair.wkIdentity)))!).id).to.equal(first.body.data.id);
    expect(await redis().xlen(keys.pushIntents)).to.equal(intents);
  });

  it('once the request is answered (an unsigned reply) or expired, the exempt type is stored', async () => {
    const answered = freshPair(0x83);
    expect(
      (await post(api.url, '/v1/action', signedAction(tx(answered), { pair: answered }))).status,
    ).to.equal(200);
    expect((await post(api.url, '/v1/action', txid(answered))).status).to.equal(200);
    expect(await redis().exists(keys.actionVerified(answered.wkIdentity))).to.equal(0);
    expect((await post(api.url, '/v1/action', recovery(answered))).status).to.equal(200);

    const expired = freshPair(0x85);
    expect((await post(api.url, '/v1/action', signedAction(tx(expired), { pair: expired }))).status).to.equal(
      200,
    );
    expect(await redis().ttl(keys.actionVerified(expired.wkIdentity))).to.be.within(895, 900);
    await redis().del(keys.action(expired.wkIdentity));
    const res = await post(api.url, '/v1/action', recovery(expired));
    expect(res.status).to.equal(200);
    expect(await redis().exists(keys.actionVerified(expired.wkIdentity))).to.equal(0);
  });

  it('a signed reply is no pending request: after a signed wksigningrequest and its signed wksigned, the unsigned recoveryrequest is stored', async () => {
    const pair = freshPair(0x89);
    const exchange = (action: string) => ({ ...tx(pair), action, payload: `${action}-payload` });
    const request = await post(api.url, '/v1/action', signedAction(exchange('wksigningrequest'), { pair }));
    expect(request.status).to.equal(200);
    const pending = await post(api.url, '/v1/action', recovery(pair));
    expect(pending.status).to.equal(409);
    const reply = await post(api.url, '/v1/action', signedAction(exchange('wksigned'), { pair, by: 'key' }));
    expect(reply.status).to.equal(200);
    expect(await redis().exists(keys.actionVerified(pair.wkIdentity))).to.equal(0);
    const res = await post(api.url, '/v1/action', recovery(pair));
    expect(res.status).to.equal(200);
    expect(res.body.data).to.include({ action: 'recoveryrequest', payload: 'deadbeef' });
    expect(await redis().get(keys.action(pair.wkIdentity))).to.equal(JSON.stringify(res.body.data));
  });

  it('an unsigned request of a table type, and a verified write of any type, replace whatever is pending', async () => {
    const pair = freshPair(0x87);
    expect((await post(api.url, '/v1/action', signedAction(tx(pair), { pair }))).status).to.equal(200);
    expect((await post(api.url, '/v1/action', tx(pair, 'cafe'))).status).to.equal(200);
    expect((await post(api.url, '/v1/action', recovery(pair))).status).to.equal(200);
    const signedRecovery = signedAction(recovery(pair), { pair });
    expect((await post(api.url, '/v1/action', signedRecovery)).status).to.equal(200);
    expect(await redis().exists(keys.actionVerified(pair.wkIdentity))).to.equal(1);
    expect((await post(api.url, '/v1/action', { ...tx(pair), action: 'somethingnew' })).status).to.equal(409);
  });
});

describe('identity-signed requests: socket joins', () => {
  let api: TestApi;
  let required: TestApi;
  const clients: TestClient[] = [];
  before(async () => {
    api = await startTestApi();
    required = await startTestApi({ AUTH_ROUTES: 'join=required' });
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });
  after(async () => {
    await api.stop();
    await required.stop();
  });

  const join = (url: string, data: unknown) => {
    const client = connectClient(url, 'key', data);
    clients.push(client);
    return client;
  };
  const refusedJoin = async (client: TestClient) => {
    await waitFor('the socket to be disconnected', () => client.disconnects.includes('io server disconnect'));
  };

  it('a signed join joins the pair’s room and gets the pending request replayed', async () => {
    expect((await post(api.url, '/v1/action', tx())).status).to.equal(200);
    const client = join(api.url, signed({ wkIdentity: PAIR.wkIdentity }, { purpose: 'join', by: 'key' }));
    await waitFor('the replay', () => dataOf(client, 'tx').length === 1);
    expect(client.socket.connected).to.equal(true);
  });

  it('forged, wrongly purposed, replayed and partial joins disconnect the socket', async () => {
    const before = await joinsHandled('unauthorized');
    const good = signed({ wkIdentity: PAIR.wkIdentity }, { purpose: 'join', by: 'key' });
    const first = join(api.url, good);
    await connected(first);
    const cases = [
      signed({ wkIdentity: PAIR.wkIdentity }, { purpose: 'join', privateKey: STRANGER_PRIVATE }),
      signed({ wkIdentity: PAIR.wkIdentity }, { purpose: 'action', by: 'key' }),
      { wkIdentity: PAIR.wkIdentity, signature: good.signature },
    ];
    for (const data of cases) await refusedJoin(join(api.url, data));
    await waitFor(
      'the first join',
      async () => (await redis().exists(keys.authNonce(PAIR.wkIdentity, nonceOf(good)))) === 1,
    );
    await refusedJoin(join(api.url, good));
    expect(await joinsHandled('unauthorized')).to.equal(before + 4);
    expect(first.socket.connected).to.equal(true);
  });

  it('join=required: an unsigned join disconnects, a signed one joins', async () => {
    await refusedJoin(join(required.url, { wkIdentity: PAIR.wkIdentity }));
    const before = await joinsHandled();
    const client = join(
      required.url,
      signed({ wkIdentity: PAIR.wkIdentity }, { purpose: 'join', by: 'key' }),
    );
    await joinsSettled(before, 1);
    expect(client.socket.connected).to.equal(true);
  });

  it('Redis unreachable: a signed join is not taken (fail closed); only the transport closes, so the client comes back', async () => {
    const client = join(api.url, undefined);
    await connected(client);
    const unavailable = await joinsHandled('unavailable');
    await testRedis().stop();
    try {
      client.socket.emit('join', signed({ wkIdentity: PAIR.wkIdentity }, { purpose: 'join', by: 'key' }));
      await waitFor('the transport to be closed', () => client.disconnects.length > 0);
      expect(client.disconnects).to.deep.equal(['transport close']);
      expect(await joinsHandled('unavailable')).to.equal(unavailable + 1);
    } finally {
      await testRedis().start();
    }
  });
});

describe('stranger bounds', () => {
  const clients: TestClient[] = [];
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });

  it('SOCKET_ROOMS_MAX: a socket may be in that many rooms; a join past it disconnects it', async () => {
    const api = await startTestApi({ SOCKET_ROOMS_MAX: '2' });
    try {
      const before = await joinsHandled();
      const client = connectClient(api.url, 'key', { wkIdentity: 'room-a' });
      clients.push(client);
      await joinsSettled(before, 1);
      client.socket.emit('join', { wkIdentity: 'room-b' });
      client.socket.emit('join', { wkIdentity: 'room-a' });
      await joinsSettled(before, 3);
      expect(client.socket.connected).to.equal(true);
      const over = await joinsHandled('too_many_rooms');
      client.socket.emit('join', { wkIdentity: 'room-c' });
      await waitFor('the socket to be disconnected', () =>
        client.disconnects.includes('io server disconnect'),
      );
      expect(await joinsHandled('too_many_rooms')).to.equal(over + 1);
    } finally {
      await api.stop();
    }
  });

  it('PUSH_PER_PAIR_PER_MINUTE: past it the action is stored and emitted, its push skipped and counted', async () => {
    const fcm = await new FakeFcm().start();
    const api = await startTestApi();
    const worker = await startTestWorker({
      PUSH_PROVIDER: 'fcm',
      FCM_SERVICE_ACCOUNT_FILE: fcm.serviceAccountFile(),
      FCM_API_URL: fcm.url,
      PUSH_PER_PAIR_PER_MINUTE: '2',
    });
    try {
      const pair = 'pair-p';
      for (const side of ['keyToken', 'walletToken']) {
        expect((await post(api.url, '/v1/token', { wkIdentity: pair, [side]: `${side}-1` })).status).to.equal(
          200,
        );
      }
      const before = await joinsHandled();
      const keyApp = connectClient(api.url, 'key', { wkIdentity: pair });
      clients.push(keyApp);
      await joinsSettled(before, 1);
      const request = (n: number) => ({ ...tx(), wkIdentity: pair, payload: `0${n}` });
      // One at a time: a job whose record was already replaced would be skipped as superseded instead.
      for (const n of [1, 2]) {
        expect((await post(api.url, '/v1/action', request(n))).status).to.equal(200);
        await waitFor(`push ${n}`, () => fcm.sends.length === n);
      }
      const throttled = await metric('relay_push_skipped_total', { reason: 'throttled' });
      const third = await post(api.url, '/v1/action', request(3));
      expect(third.status).to.equal(200);
      await waitFor(
        'the push to be skipped',
        async () => (await metric('relay_push_skipped_total', { reason: 'throttled' })) === throttled + 1,
      );
      expect(fcm.sentTo()).to.deep.equal(['keyToken-1', 'keyToken-1']);
      expect((await get(api.url, `/v1/action/${pair}`)).body.data).to.deep.equal(third.body.data);
      await waitFor('three events', () => dataOf(keyApp, 'tx').length === 3);
      expect(await redis().get(keys.pushCount(pair, 'key'))).to.equal('3');
      expect(await redis().pttl(keys.pushCount(pair, 'key'))).to.be.within(1, 60_000);
      // The other side of the pair has its own count.
      expect((await post(api.url, '/v1/action', { ...txid(), wkIdentity: pair })).status).to.equal(200);
      await waitFor('the wallet push', () => fcm.sends.length === 3);
      expect(fcm.sentTo()[2]).to.equal('walletToken-1');
    } finally {
      await worker.stop();
      await api.stop();
      await fcm.stop();
    }
  });

  it('TOKEN_REGISTRATIONS_PER_HOUR per pair and side; the other side and other pairs are unaffected', async () => {
    const api = await startTestApi({ TOKEN_REGISTRATIONS_PER_HOUR: '3' });
    try {
      for (let i = 0; i < 3; i++) {
        expect(
          (await post(api.url, '/v1/token', { wkIdentity: 'pair-t', keyToken: `k${i}` })).status,
        ).to.equal(200);
      }
      const over = await post(api.url, '/v1/token', { wkIdentity: 'pair-t', keyToken: 'k3' });
      expect(over.status).to.equal(429);
      expect(over.body).to.deep.equal(
        errorBody(over, 'RATE_LIMITED', 'Too many key token registrations for this pair; retry later.'),
      );
      expect(Number(over.headers.get('retry-after'))).to.be.within(3500, 3600);
      expect(await redis().zrange(keys.tokens('pair-t', 'key'), 0, -1)).to.deep.equal(['k0', 'k1', 'k2']);
      expect((await post(api.url, '/v1/token', { wkIdentity: 'pair-t', walletToken: 'w0' })).status).to.equal(
        200,
      );
      expect((await post(api.url, '/v1/token', { wkIdentity: 'pair-u', keyToken: 'k0' })).status).to.equal(
        200,
      );
    } finally {
      await api.stop();
    }
  });

  it('TOKEN_REGISTRATIONS_PER_ADDRESS_PER_DAY per client address, over every pair, a sync’s keyToken included (over it, the sync is stored without it)', async () => {
    const api = await startTestApi({ TOKEN_REGISTRATIONS_PER_ADDRESS_PER_DAY: '3' });
    try {
      const both = await post(api.url, '/v1/token', {
        wkIdentity: 'pair-v',
        keyToken: 'k',
        walletToken: 'w',
      });
      expect(both.status).to.equal(200);
      const sync = {
        chain: 'btc',
        walletIdentity: 'w-v',
        keyXpub: 'xpub1',
        wkIdentity: 'pair-w',
        keyToken: 'k2',
      };
      expect((await post(api.url, '/v1/sync', sync)).status).to.equal(200);
      const over = await post(api.url, '/v1/token', { wkIdentity: 'pair-x', keyToken: 'k3' });
      expect(over.status).to.equal(429);
      expect(over.body).to.deep.equal(
        errorBody(over, 'RATE_LIMITED', 'Too many token registrations from this address; retry later.'),
      );
      expect(Number(over.headers.get('retry-after'))).to.be.within(86_000, 86_400);
      expect(await redis().exists(keys.tokens('pair-x', 'key'))).to.equal(0);
      expect(await redis().get('relay:rl:tokenaddress:127.0.0.1')).to.equal('4');
      // Pairing matters more than the token: the sync is stored, its keyToken skipped, counted and logged.
      const skipped = () => metric('relay_sync_key_tokens_skipped_total', { limit: 'address' });
      const before = await skipped();
      const { keyToken: _, ...record } = { ...sync, walletIdentity: 'w-y', wkIdentity: 'pair-y' };
      const syncOver = await post(api.url, '/v1/sync', { ...record, keyToken: 'k4' });
      expect(syncOver.status, syncOver.text).to.equal(200);
      expect(syncOver.body).to.deep.equal({ success: true, data: record });
      expect(await redis().get(keys.sync('w-y'))).to.equal(JSON.stringify(record));
      expect(await redis().exists(keys.tokens('pair-y', 'key'))).to.equal(0);
      expect(await redis().exists(keys.tokenOwner('key', 'k4'))).to.equal(0);
      expect(await skipped()).to.equal(before + 1);
      const line = api.logs.find((entry) => entry.limit === 'address');
      expect(line).to.include({
        level: 'info',
        msg: 'sync stored without its keyToken: a token registration limit refused it',
      });
      expect(JSON.stringify(line)).not.to.match(/pair-y|w-y|k4/);
    } finally {
      await api.stop();
    }
  });

  it('POST /v1/token is charged to the per-IP write budget', async () => {
    const api = await startTestApi({ WRITE_BUDGET_BYTES: String(2 * 1024 * 1024) });
    try {
      // An action body (its unknown field dropped, yet counted) leaves 1,000 bytes of the budget.
      const action = { chain: 'eth', wkIdentity: 'pair-b', action: 'other', payload: 'x'.repeat(1_000_000) };
      const pad = 2 * 1024 * 1024 - 1000 - JSON.stringify({ ...action, pad: '' }).length;
      const stored = await post(api.url, '/v1/action', { ...action, pad: 'y'.repeat(pad) });
      expect(stored.status, stored.text).to.equal(200);
      const res = await post(api.url, '/v1/token', { wkIdentity: 'pair-b', keyToken: 't'.repeat(1000) });
      expect(res.status).to.equal(429);
      expect(res.body).to.deep.equal(
        errorBody(res, 'RATE_LIMITED', 'Too many bytes written from this address; retry later.'),
      );
      expect(await redis().exists(keys.tokens('pair-b', 'key'))).to.equal(0);
    } finally {
      await api.stop();
    }
  });

  it('the socket cap counts an IPv6 client by its /64', async () => {
    const api = await startTestApi({ TRUST_PROXY_HOPS: '1', SOCKETS_PER_IP: '1' });
    try {
      const from = (ip: string) => {
        const client = connectClient(api.url, 'key', undefined, { extraHeaders: { 'X-Forwarded-For': ip } });
        clients.push(client);
        return client;
      };
      await connected(from('2001:db8:5:6::1'));
      const sameBlock = from('2001:db8:5:6::2');
      await waitFor('the handshake to be refused', () => sameBlock.connectErrors.length > 0);
      sameBlock.close();
      await connected(from('2001:db8:5:7::1'));
    } finally {
      await api.stop();
    }
  });

  it('rate limits count an IPv6 client by its /64', async () => {
    const api = await startTestApi({ TRUST_PROXY_HOPS: '1', RATE_LIMIT_POINTS: '2' });
    try {
      const from = (ip: string) => get(api.url, '/v1/services', { 'X-Forwarded-For': ip });
      expect((await from('2001:db8:1:2::1')).status).to.equal(200);
      expect((await from('2001:db8:1:2:ffff::9')).status).to.equal(200);
      expect((await from('2001:db8:1:2::3')).status).to.equal(429);
      expect((await from('2001:db8:1:3::1')).status).to.equal(200);
      expect(await redis().exists('relay:rl:api:2001:db8:1:2::/64')).to.equal(1);
    } finally {
      await api.stop();
    }
  });
});
