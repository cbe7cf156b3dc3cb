import { spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Server } from 'socket.io';
import {
  bodyDigest,
  CLOSED_BEFORE_JOIN,
  JoinError,
  RelayClient,
  RelayError,
  signBody,
  signMessage,
  UNEXPECTED_RESPONSE,
  witnessScriptOf,
  wkIdentityOf,
  type ActionRecord,
  type Delivered,
  type JoinedAnswer,
  type PairKeys,
  type StreamPosition,
} from '../../client/index.js';
import { bodyDigest as relayBodyDigest } from '../../src/identity/verify.js';
import { API_PROFILES } from '../../src/core/config/config.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { MarketStore } from '../../src/market/store.js';
import { post, startTestApi, type TestApi } from '../helpers/api.js';
import { checkedFetch, type Sent } from '../helpers/client-fetch.js';
import { redis } from '../helpers/redis.js';
import {
  KEY_PRIVATE,
  PAIR,
  publicKeyOf,
  VECTOR,
  VECTOR_REQUEST,
  vectorBody,
  WALLET_PRIVATE,
} from '../helpers/signing.js';
import { joinsHandled, joinsSettled, roomSubscribers } from '../helpers/sockets.js';
import { startTokenRelay, USDC, USDC_INFO, type TokenRelay } from '../helpers/token-relay.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The client library (client/, docs/api.md#client-library) against a real relay: every call under both
 * profiles, its signer against the reference vector, signed writes and joins where the relay requires them, and
 * the body-hash rule as a program outside JavaScript (client/examples/sign_body.py) computes it.
 */

const keys = keysFor('relay:');
const walletKeys: PairKeys = {
  privateKey: WALLET_PRIVATE,
  walletPublicKey: publicKeyOf(WALLET_PRIVATE),
  keyPublicKey: publicKeyOf(KEY_PRIVATE),
};
const keyKeys: PairKeys = { ...walletKeys, privateKey: KEY_PRIVATE.toString('hex') };

/** The requests the clients of this file made, the last one's X-Request-Id among them. */
const sent: Sent[] = [];
const lastRequestId = () => sent.at(-1)?.requestId;
/** The If-None-Match of the last request the client sent, and the status it got. */
const lastExchange = () => {
  const last = sent.at(-1);
  return last && { ifNoneMatch: last.ifNoneMatch, status: last.status };
};

/** A client of `api` whose every response is checked against the OpenAPI document, as the other tests' are. */
function clientOf(api: TestApi): RelayClient {
  return new RelayClient({
    baseUrl: `${api.url}/`,
    profile: api.config.apiProfile,
    fetch: checkedFetch(api.url, sent),
  });
}

/** The error `call` is rejected with, a RelayError unless `type` says otherwise (JoinError for `joined`). */
async function refusal<E = RelayError>(
  call: Promise<unknown>,
  type: new (...args: never[]) => E = RelayError as never,
): Promise<E> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).to.be.instanceOf(type);
  return err as E;
}

const SECRET = 'test-onramper-secret-0123456789';
const XPUB = `xpub${'A'.repeat(107)}`;
const XPUB_SIGNATURE =
  'H9L5yLFjti0QTHhPyFrZCT1V/MMnBtXKmoiKDZ78NDBjERki6ZTQZdSMCtkgoNmp17By9ItJr8o7ChX0XxY91nk=';
const syncRecord = {
  chain: 'btc',
  walletIdentity: PAIR.walletIdentity,
  keyXpub: XPUB,
  wkIdentity: PAIR.wkIdentity,
};
const txBody = { chain: 'btc', wkIdentity: PAIR.wkIdentity, action: 'tx', payload: 'deadbeef', path: '0-0' };
const txidBody = { chain: 'btc', wkIdentity: PAIR.wkIdentity, action: 'txid', payload: 'ab'.repeat(32) };

describe('client: signing', () => {
  it('reproduces the reference vector byte for byte: script, identity, data, message, signature', () => {
    expect(witnessScriptOf(walletKeys.walletPublicKey, walletKeys.keyPublicKey)).to.equal(
      VECTOR.witnessScript,
    );
    expect(wkIdentityOf(walletKeys.walletPublicKey, walletKeys.keyPublicKey)).to.equal(VECTOR.wkIdentity);
    expect(bodyDigest(VECTOR_REQUEST)).to.equal(VECTOR.data);
    // The four fields are never part of the hash.
    expect(bodyDigest(vectorBody())).to.equal(VECTOR.data);
    const credential = signBody(VECTOR_REQUEST, 'action', walletKeys, {
      timestamp: VECTOR.now,
      nonce: 'ab'.repeat(32),
    });
    const { signature, message, publicKey, witnessScript } = vectorBody();
    expect(credential).to.deep.equal({ signature, message, publicKey, witnessScript });
    expect(JSON.stringify({ ...VECTOR_REQUEST, ...credential })).to.equal(JSON.stringify(vectorBody()));
  });

  it('signs with either key of the pair, a hex or a byte key, and refuses a key outside it or a body without wkIdentity', () => {
    const byKey = signBody(VECTOR_REQUEST, 'action', keyKeys, {
      timestamp: VECTOR.now,
      nonce: 'cd'.repeat(32),
    });
    expect(byKey.publicKey).to.equal(publicKeyOf(KEY_PRIVATE));
    expect(byKey.signature).to.equal(signMessage(byKey.message, KEY_PRIVATE));
    expect(JSON.parse(byKey.message)).to.deep.equal({
      timestamp: VECTOR.now,
      action: 'action',
      identity: VECTOR.wkIdentity,
      nonce: 'cd'.repeat(32),
      data: VECTOR.data,
    });
    const fresh = [1, 2].map(() => JSON.parse(signBody(VECTOR_REQUEST, 'token', walletKeys).message));
    expect(fresh[0].nonce).to.match(/^[0-9a-f]{64}$/);
    expect(fresh[0].nonce).to.not.equal(fresh[1].nonce);
    expect(() => signBody(VECTOR_REQUEST, 'action', { ...walletKeys, privateKey: '33'.repeat(32) })).to.throw(
      TypeError,
      'neither of the pair',
    );
    expect(() => signBody({ chain: 'btc' }, 'action', walletKeys)).to.throw(TypeError, 'wkIdentity');
  });
});

describe('client: the body hash outside JavaScript (client/examples/sign_body.py)', () => {
  /** Bodies as a client's bytes carry them; the relay hashes JSON.stringify of what it parses. */
  const BODIES = [
    '{"name":"Zoë 🚀 日本 ℃","path":"a/b</script>","sep":"\u2028\u2029","escaped":"\\u00e9\\/\\u0041"}',
    '{"ctl":"\\u0000\\u0001\\b\\f\\n\\r\\t\\u000b\\u001f\\u007f\\"\\\\","lone":"\\ud800x\\udfff","pair":"\\ud83d\\ude00"}',
    '{"a":1.0,"b":1e21,"c":1e20,"d":1e-6,"e":1e-7,"f":-0,"g":-0.0,"h":0.1,"i":1.5e300,"j":5e-324,"k":123e-20}',
    '{"big":123456789012345678901234,"unsafe":9007199254740993,"over":1e400,"third":0.3333333333333333,"e16":1e16}',
    '{"wkIdentity":"bc1q","utxos":[{"txid":"ab","vout":0,"satoshis":"1","coinbase":false,"x":null}],"o":{"z":{"y":[[],{},[true]]}}}',
    '{ "b" : 1 , "a" : [ 1 , 2 ] ,\t"dup":1,"dup":2 }',
    `{"action":"tx","signature":"x","message":"y","publicKey":"z","witnessScript":"w","wkIdentity":"${PAIR.wkIdentity}"}`,
  ];

  /** `data` for each body, one per line, as the Python example computes it. */
  function pythonData(bodies: string[]): string[] {
    const run = spawnSync('python3', ['client/examples/sign_body.py', 'data'], {
      input: bodies.join('\n'),
      encoding: 'utf8',
    });
    expect(run.stderr).to.equal('');
    expect(run.status).to.equal(0);
    return run.stdout.trim().split('\n');
  }

  it('gives the digest the client and the relay compute, for unicode, `/`, control characters, numbers, nesting', () => {
    const python = pythonData(BODIES);
    const client = BODIES.map((text) => bodyDigest(JSON.parse(text)));
    const relay = BODIES.map((text) => relayBodyDigest(JSON.parse(text)));
    expect(python).to.deep.equal(client);
    expect(client).to.deep.equal(relay);
    // The rule is not json.dumps: `1.0` hashes as `1`, `1e21` as `1e+21`, `é` unescaped.
    expect(JSON.stringify(JSON.parse(BODIES[2]!))).to.equal(
      '{"a":1,"b":1e+21,"c":100000000000000000000,"d":0.000001,"e":1e-7,"f":0,"g":0,"h":0.1,"i":1.5e+300,"j":5e-324,"k":1.23e-18}',
    );
  });

  describe('on a relay that requires signatures', () => {
    let api: TestApi;
    before(async () => {
      api = await startTestApi({ AUTH_MODE: 'required', AUTH_ROUTES: 'sync=optional' });
    });
    after(() => api.stop());

    it('accepts a body signed with the data Python computed from its bytes (`1.0`, `1e3`, `\\u00e9`, `\\/`)', async () => {
      const text = `{"chain":"testchain","wkIdentity":"${PAIR.wkIdentity}","action":"tx","payload":"caf\\u00e9 \\/ 1.0","path":"0-0","utxos":[{"txid":"ab","vout":1.0,"satoshis":1e3}]}`;
      const [data] = pythonData([text]);
      const message = JSON.stringify({
        timestamp: Date.now(),
        action: 'action',
        identity: PAIR.wkIdentity,
        nonce: 'ef'.repeat(32),
        data,
      });
      const credential = {
        signature: signMessage(message, WALLET_PRIVATE),
        message,
        publicKey: walletKeys.walletPublicKey,
        witnessScript: PAIR.witnessScript,
      };
      const res = await post(
        api.url,
        '/v1/action',
        `${text.slice(0, -1)},${JSON.stringify(credential).slice(1)}`,
      );
      expect(res.status, res.text).to.equal(200);
      expect(res.body.data).to.include({ payload: 'café / 1.0', chain: 'testchain' });
      expect(res.body.data.utxos).to.deep.equal([{ txid: 'ab', vout: 1, satoshis: 1000 }]);
      expect(JSON.parse((await redis().get(keys.action(PAIR.wkIdentity)))!)).to.deep.equal(res.body.data);
    });
  });
});

for (const profile of API_PROFILES) {
  const apps = profile === 'ssp-apps';

  describe(`client under API_PROFILE=${profile}: every call answers the payload`, () => {
    let relay: TokenRelay;
    let api: TestApi;
    let client: RelayClient;
    before(async () => {
      relay = await startTokenRelay({
        API_PROFILE: profile,
        ONRAMPER_SECRET: SECRET,
        SERVICES: '{"onramp":true,"offramp":false,"swap":true}',
        SUBMISSIONS_PER_DAY: '1000',
      });
      api = relay.api;
      client = clientOf(api);
    });
    after(() => relay.stop());

    it('getPresence answers each side; onJoined tells the other side’s presence, onPresence registers a handler', async () => {
      const wkIdentity = `presence-${profile}`;
      expect(await client.getPresence(wkIdentity)).to.deep.equal({
        key: { connected: false, lastSeen: null },
        wallet: { connected: false, lastSeen: null },
      });
      const answers: JoinedAnswer[] = [];
      const key = client.connectEvents('key', { wkIdentity, onJoined: (answer) => answers.push(answer) });
      await key.joined;
      const wallet = client.connectEvents('wallet', {
        wkIdentity,
        onJoined: (answer) => answers.push(answer),
      });
      try {
        await wallet.joined;
        expect(wallet.onPresence(() => {})).to.equal(wallet);
        const { key: keySide, wallet: walletSide } = await client.getPresence(wkIdentity);
        expect(keySide.connected && walletSide.connected).to.equal(true);
        expect(answers[0]).to.deep.equal({
          epoch: null,
          offset: 0,
          peer: { connected: false, lastSeen: null },
        });
        expect(answers[1]).to.deep.equal({
          epoch: null,
          offset: 0,
          peer: { connected: true, lastSeen: answers[1]!.peer.lastSeen },
        });
      } finally {
        key.close();
        wallet.close();
      }
    });

    it('postSync stores the record and getSync reads it; a missing one is RelayError NOT_FOUND with its request id', async () => {
      expect(await client.postSync({ ...syncRecord, keyToken: null })).to.deep.equal(syncRecord);
      expect(JSON.parse((await redis().get(keys.sync(PAIR.walletIdentity)))!)).to.deep.equal(syncRecord);
      expect(await client.getSync(PAIR.walletIdentity)).to.deep.equal(syncRecord);
      const missing = await refusal(client.getSync('nobody'));
      expect(missing).to.include({
        status: 404,
        code: 'NOT_FOUND',
        requestId: lastRequestId(),
        retryAfter: undefined,
      });
      expect(missing.message).to.equal('No synchronization record for this wallet identity.');
    });

    it('postAction answers the stored record and getAction reads the same (with expireAt under ssp-apps)', async () => {
      const record = await client.postAction({
        ...txBody,
        utxos: [{ txid: 'ab', vout: 0, satoshis: '1500' }],
      });
      expect(record).to.deep.equal({
        id: record.id,
        ...txBody,
        utxos: [{ txid: 'ab', vout: 0, satoshis: '1500' }],
        createdAt: record.createdAt,
        expiresAt: record.expiresAt,
        ...(apps ? { expireAt: record.expiresAt } : {}),
        // The first request to the key of this pair in this run.
        epoch: record.epoch,
        offset: 1,
      });
      expect(record.epoch).to.match(/^[A-Za-z0-9_-]{8,32}$/);
      expect(Date.parse(record.expiresAt) - Date.parse(record.createdAt)).to.equal(900_000);
      expect(await client.getAction(PAIR.wkIdentity)).to.deep.equal(record);
      expect(JSON.parse((await redis().get(keys.action(PAIR.wkIdentity)))!)).to.deep.equal(record);
    });

    it('getAction revalidates with the last ETag: a 304 answers the record it had, a new record is read again', async () => {
      const poller = clientOf(api);
      const first = await client.postAction(txBody);
      expect(await poller.getAction(PAIR.wkIdentity)).to.deep.equal(first);
      expect(lastExchange()).to.deep.equal({ ifNoneMatch: null, status: 200 });
      const tag = `"${first.id}"`;
      expect(await poller.getAction(PAIR.wkIdentity)).to.deep.equal(first);
      expect(lastExchange()).to.deep.equal({ ifNoneMatch: tag, status: 304 });
      const reply = await client.postAction(txidBody);
      expect(await poller.getAction(PAIR.wkIdentity)).to.deep.equal(reply);
      expect(lastExchange()).to.deep.equal({ ifNoneMatch: tag, status: 200 });
      await redis().del(keys.action(PAIR.wkIdentity));
      expect(await refusal(poller.getAction(PAIR.wkIdentity))).to.include({ status: 404, code: 'NOT_FOUND' });
      // After a 404 nothing is held: the next read asks unconditionally.
      const again = await client.postAction(txBody);
      expect(await poller.getAction(PAIR.wkIdentity)).to.deep.equal(again);
      expect(lastExchange()).to.deep.equal({ ifNoneMatch: null, status: 200 });
    });

    it('pollAction reads a direction after a position; with wait, the relay holds it until the next record', async () => {
      const wkIdentity = `poll-${profile}`;
      const first = await client.postAction({ ...txidBody, wkIdentity });
      const from0 = await client.pollAction(wkIdentity, { to: 'wallet', after: 0 });
      expect(from0).to.deep.equal({ epoch: first.epoch, offset: 1, recovered: true, records: [first] });
      const held = client.pollAction(wkIdentity, {
        to: 'wallet',
        after: from0.offset,
        epoch: from0.epoch,
        wait: 20,
      });
      await waitFor('the poll held', async () => (await roomSubscribers('wallet', wkIdentity)) === 1);
      const next = await client.postAction({ ...txidBody, wkIdentity });
      expect(await held).to.deep.equal({ epoch: first.epoch, offset: 2, recovered: true, records: [next] });
      const bad = await refusal(client.pollAction(wkIdentity, { to: 'wallet', after: 1 }));
      expect(bad).to.include({ status: 400, code: 'INVALID_PARAMETER' });
      expect(bad.details).to.deep.equal([
        { field: '/query/epoch', message: "must have required property 'epoch'" },
      ]);
    });

    it('connectEvents with since reports each position reached, and a reconnect resumes from the last one', async () => {
      const wkIdentity = `position-${profile}`;
      const stored = [
        await client.postAction({ ...txidBody, wkIdentity }),
        await client.postAction({ ...txidBody, wkIdentity }),
      ];
      const epoch = stored[0]!.epoch!;
      const handled: ActionRecord[] = [];
      const answers: JoinedAnswer[] = [];
      /** Each position reported, and whether the app had handled that record by then. */
      const positions: [StreamPosition, boolean][] = [];
      const wasHandled = ({ epoch, offset }: StreamPosition) =>
        handled.some((record) => record.epoch === epoch && record.offset === offset);
      const events = client
        .connectEvents('wallet', {
          wkIdentity,
          since: { offset: 0 },
          onJoined: (answer) => answers.push(answer),
          onPosition: (position) => positions.push([position, wasHandled(position)]),
        })
        .on('txid', (record) => handled.push(record));
      try {
        await events.joined;
        await waitFor('the replay', () => positions.at(-1)?.[0].offset === 2);
        expect(handled).to.deep.equal(stored);
        expect(answers).to.deep.equal([
          { epoch, offset: 2, peer: { connected: false, lastSeen: null }, recovered: true, replayed: 2 },
        ]);
        // Both records may come in one batch: then the position reported is the second one's.
        expect(positions.at(-1)).to.deep.equal([{ epoch, offset: 2 }, true]);
        expect(positions.every(([, before]) => before)).to.equal(true);
        const reported = positions.length;
        const live = await client.postAction({ ...txidBody, wkIdentity });
        await waitFor('the live record', () => positions.length === reported + 1);
        expect(positions.at(-1)).to.deep.equal([{ epoch, offset: 3 }, true]);

        // A new connection joins from offset 3: nothing is sent again.
        events.socket.io.engine.close();
        await waitFor('the second join', () => answers.length === 2);
        expect(answers[1]).to.deep.include({ epoch, offset: 3, recovered: true, replayed: 0 });
        expect(handled).to.deep.equal([...stored, live]);

        // The relay lost the direction's position: the next record starts a new epoch, reported as such.
        await redis().del(keys.streamMeta(wkIdentity, 'wallet'));
        const renewed = await client.postAction({ ...txidBody, wkIdentity });
        expect(renewed.epoch).to.not.equal(epoch);
        await waitFor('the new epoch', () => positions.at(-1)?.[0].epoch === renewed.epoch);
        expect(positions.at(-1)).to.deep.equal([{ epoch: renewed.epoch, offset: 1 }, true]);
        expect(handled.at(-1)).to.deep.equal(renewed);

        // A failover lost the last append (offset 2): the join is not recovered, and the client takes the relay's
        // lower position, so the record that takes offset 2 again moves it on.
        await client.postAction({ ...txidBody, wkIdentity });
        await waitFor('offset 2', () => positions.at(-1)?.[0].offset === 2);
        const [last] = await redis().xrevrange(keys.stream(wkIdentity, 'wallet'), '+', '-', 'COUNT', 1);
        await redis().xdel(keys.stream(wkIdentity, 'wallet'), last![0]);
        await redis().hincrby(keys.streamMeta(wkIdentity, 'wallet'), 'offset', -1);
        events.socket.io.engine.close();
        await waitFor('the join after the loss', () => answers.length === 3);
        expect(answers[2]).to.deep.include({
          epoch: renewed.epoch,
          offset: 1,
          recovered: false,
          replayed: 0,
        });
        await waitFor('the lower position', () => positions.at(-1)?.[0].offset === 1);
        expect(positions.at(-1)).to.deep.equal([{ epoch: renewed.epoch, offset: 1 }, true]);
      } finally {
        events.close();
      }
    });

    it('postToken answers the counts; Redis holds the token', async () => {
      expect(await client.postToken({ wkIdentity: PAIR.wkIdentity, keyToken: 'fcm-key-1' })).to.deep.equal({
        wkIdentity: PAIR.wkIdentity,
        keyTokens: 1,
        walletTokens: 0,
      });
      expect(await redis().zrange(keys.tokens(PAIR.wkIdentity, 'key'), 0, -1)).to.deep.equal(['fcm-key-1']);
    });

    it('getRates and getNetworkFees: RelayError UNAVAILABLE with retryAfter before a fetch, then what Redis holds', async () => {
      for (const early of [client.getRates(), client.getNetworkFees()]) {
        expect(await refusal(early)).to.include({ status: 503, code: 'UNAVAILABLE', retryAfter: 10 });
      }
      const store = new MarketStore(redis(), keys);
      const at = new Date('2026-11-25T12:00:00.000Z');
      await store.saveRatesPart('crypto', { btc: 97000.1, eth: 3500.2 }, at);
      await store.saveRatesPart('fiat', { USD: 1, EUR: 0.92 }, at);
      expect(await client.getRates()).to.deep.equal({
        fiat: { USD: 1, EUR: 0.92, BTC: 1 / 97000.1, ETH: 1 / 3500.2 },
        crypto: { btc: 97000.1, eth: 3500.2 },
        updatedAt: at.toISOString(),
      });
      const row = {
        coin: 'btc',
        economy: 10,
        normal: 15,
        fast: 20,
        recommended: 20,
        updatedAt: at.toISOString(),
      };
      await store.saveFees([row]);
      expect(await client.getNetworkFees()).to.deep.equal([row]);
    });

    it('getTokenInfo answers the token; a bad address is RelayError INVALID_PARAMETER with details', async () => {
      expect(await client.getTokenInfo('eth', USDC)).to.deep.equal(USDC_INFO);
      const bad = await refusal(client.getTokenInfo('eth', '0x12'));
      expect(bad).to.include({ status: 400, code: 'INVALID_PARAMETER', requestId: lastRequestId() });
      expect(bad.details?.map((d) => d.field)).to.deep.equal(['/params/address']);
      // Path segments are encoded: a `/` stays in its segment and is refused, never a different route.
      expect(await refusal(client.getTokenInfo('eth/x', USDC))).to.include({
        status: 400,
        code: 'INVALID_PARAMETER',
      });
    });

    it('getServices and signPartner; a client set to the standard profile cannot read a bare answer', async () => {
      expect(await client.getServices()).to.deep.equal({ onramp: true, offramp: false, swap: true });
      if (apps) {
        const standard = new RelayClient({ baseUrl: api.url });
        expect(await refusal(standard.getServices())).to.include({ status: 200, code: UNEXPECTED_RESPONSE });
      }
      const signedData = 'wallets=btc:bc1qxyz&networkWallets=bitcoin:bc1qxyz';
      expect(
        await client.signPartner('onramper', { wallets: 'btc:bc1qxyz', networkWallets: 'bitcoin:bc1qxyz' }),
      ).to.deep.equal({
        signature: createHmac('sha256', SECRET).update(signedData).digest('hex'),
        signedData,
      });
      expect(await refusal(client.signPartner('nobody', { wallets: 'x' }))).to.include({
        status: 404,
        code: 'NOT_FOUND',
      });
    });

    it('postTicket and postContact are queued; Redis holds the jobs', async () => {
      const ticket = {
        subject: 'Cannot sign',
        description: 'An error.',
        type: 'Incident',
        email: 'ann@example.com',
      };
      const contact = { name: 'Ann', email: 'ann@example.com', message: 'Hello' };
      const queued = [await client.postTicket(ticket), await client.postContact(contact)];
      expect(queued.map((q) => q.status)).to.deep.equal(['queued', 'queued']);
      const jobs = await Promise.all(
        queued.map(async ({ id }) =>
          JSON.parse((await redis().hget(`relay:{bull:support}:support:${id}`, 'data'))!),
        ),
      );
      expect(jobs).to.deep.equal([
        { kind: 'ticket', ...ticket },
        { kind: 'contact', ...contact },
      ]);
    });

    it('postRecoveryPub, signed by the key app, and getRecoveryPub', async () => {
      const body = {
        wkIdentity: PAIR.wkIdentity,
        recoveryXpub: XPUB,
        xpubSignature: XPUB_SIGNATURE,
        chain: 'btc',
      };
      const record = await client.postRecoveryPub(body, { sign: keyKeys });
      expect(record).to.deep.equal({ ...body, createdAt: record.createdAt });
      expect(await client.getRecoveryPub(PAIR.wkIdentity)).to.deep.equal(record);
      expect(JSON.parse((await redis().get(keys.recoveryPub(PAIR.wkIdentity)))!)).to.deep.equal(record);
    });

    it('getNoncesStatus, health and ready', async () => {
      expect(await client.getNoncesStatus(PAIR.wkIdentity)).to.deep.equal({
        replenishNeeded: { key: false, wallet: false },
      });
      expect(await client.health()).to.deep.equal({ status: 'ok' });
      expect(await client.ready()).to.deep.equal({ status: 'ready' });
    });

    it('events: the key side gets requests, the wallet side replies; a reconnect joins again; after leave, nothing', async () => {
      const before = await joinsHandled();
      const received = {
        key: [] as ActionRecord[],
        wallet: [] as ActionRecord[],
        later: [] as ActionRecord[],
      };
      const key = client
        .connectEvents('key', { wkIdentity: PAIR.wkIdentity })
        .on('tx', (r) => received.key.push(r));
      const wallet = client
        .connectEvents('wallet', { wkIdentity: PAIR.wkIdentity })
        .on('txid', (r) => received.wallet.push(r));
      let later: ReturnType<RelayClient['connectEvents']> | undefined;
      try {
        await joinsSettled(before, 2);
        const tx = await client.postAction(txBody);
        await waitFor('the request on the key path', () => received.key.length === 1);
        expect(received.key).to.deep.equal([tx]);

        // A new connection joins again, and the relay replays the pending request to it.
        const rejoined = await joinsHandled();
        key.socket.io.engine.close();
        await joinsSettled(rejoined, 1);
        await waitFor('the replay', () => received.key.length === 2);
        expect(received.key).to.deep.equal([tx, tx]);

        const txid = await client.postAction(txidBody);
        await waitFor('the reply on the wallet path', () => received.wallet.length === 1);
        expect(received.wallet).to.deep.equal([txid]);

        // A socket's events are handled in order: once a probe's join is done, the leave is too.
        const probed = await joinsHandled();
        key.leave();
        key.socket.emit('join', { wkIdentity: 'probe' });
        await joinsSettled(probed, 1);
        const joined = await joinsHandled();
        later = client
          .connectEvents('key', { wkIdentity: PAIR.wkIdentity })
          .on('tx', (r) => received.later.push(r));
        await joinsSettled(joined, 1);
        const second = await client.postAction(txBody);
        await waitFor('the request on a socket still in the room', () => received.later.length === 1);
        expect(received.later).to.deep.equal([second]);
        expect(received.key).to.deep.equal([tx, tx]);
      } finally {
        for (const events of [key, wallet, later]) events?.close();
      }
    });

    it('a join with a wkIdentity that is no identifier: joined rejects with JoinError INVALID_PARAMETER, not tried again', async () => {
      const before = await joinsHandled('invalid');
      const refused: string[] = [];
      const events = client.connectEvents('wallet', {
        wkIdentity: 'not an identifier',
        rejoinDelayMs: 20,
        onRefused: (code) => refused.push(code),
      });
      try {
        const err = await refusal(events.joined, JoinError);
        expect(err).to.include({ code: 'INVALID_PARAMETER', name: 'JoinError' });
        expect(err.message).to.equal('the relay refused the join on /v1/socket/wallet: INVALID_PARAMETER');
        expect(refused).to.deep.equal(['INVALID_PARAMETER']);
        await joinsSettled(before, 1, 'invalid');
        await waitFor('the socket to stop', () => !events.socket.active);
        // Well past rejoinDelayMs: no second attempt.
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(await joinsHandled('invalid')).to.equal(before + 1);
      } finally {
        events.close();
      }
    });
  });
}

describe('client: signed writes and joins on a relay with AUTH_MODE=required', () => {
  let api: TestApi;
  let client: RelayClient;
  before(async () => {
    api = await startTestApi({
      AUTH_MODE: 'required',
      AUTH_ROUTES: 'sync=optional',
      TOKEN_REGISTRATIONS_PER_HOUR: '1',
    });
    client = clientOf(api);
  });
  after(() => api.stop());

  it('a signed action is stored without the four fields; unsigned it is RelayError AUTH_REQUIRED and nothing is written', async () => {
    expect(await refusal(client.postAction(txBody))).to.include({ status: 401, code: 'AUTH_REQUIRED' });
    expect(await redis().exists(keys.action(PAIR.wkIdentity))).to.equal(0);
    const record = await client.postAction(txBody, { sign: walletKeys });
    expect(record).to.deep.equal({
      id: record.id,
      ...txBody,
      createdAt: record.createdAt,
      expiresAt: record.expiresAt,
      epoch: record.epoch,
      offset: 1,
    });
    expect(JSON.parse((await redis().get(keys.action(PAIR.wkIdentity)))!)).to.deep.equal(record);
    const reply = await client.postAction(txidBody, { sign: keyKeys });
    expect(reply).to.include(txidBody);
  });

  it('a signed token registration, then one over TOKEN_REGISTRATIONS_PER_HOUR: RelayError RATE_LIMITED with retryAfter', async () => {
    const token = (walletToken: string) =>
      client.postToken({ wkIdentity: PAIR.wkIdentity, walletToken }, { sign: walletKeys });
    expect(await token('fcm-wallet-1')).to.deep.equal({
      wkIdentity: PAIR.wkIdentity,
      keyTokens: 0,
      walletTokens: 1,
    });
    const limited = await refusal(token('fcm-wallet-2'));
    expect(limited).to.include({ status: 429, code: 'RATE_LIMITED', requestId: lastRequestId() });
    expect(limited.retryAfter).to.be.a('number').within(1, 3600);
    expect(await redis().zrange(keys.tokens(PAIR.wkIdentity, 'wallet'), 0, -1)).to.deep.equal([
      'fcm-wallet-1',
    ]);
  });

  it('a signed sync', async () => {
    expect(await client.postSync(syncRecord, { sign: keyKeys })).to.deep.equal(syncRecord);
  });

  it('joined resolves once the relay acknowledged the signed join: an action stored right after reaches the socket', async () => {
    const received: ActionRecord[] = [];
    let acknowledged = 0;
    const events = client
      .connectEvents('key', { wkIdentity: PAIR.wkIdentity, sign: keyKeys, onJoined: () => acknowledged++ })
      .on('tx', (record) => received.push(record));
    try {
      expect(events.joined).to.be.instanceOf(Promise);
      await events.joined;
      expect(acknowledged).to.equal(1);
      // The acknowledgement comes after the replay of a pending request, if any.
      const replayed = received.length;
      const record = await client.postAction(txBody, { sign: walletKeys });
      await waitFor('the event', () => received.length > replayed);
      expect(received.slice(replayed)).to.deep.equal([record]);
      // A reconnect joins again: onJoined each time.
      events.socket.io.engine.close();
      await waitFor('the second acknowledgement', () => acknowledged === 2);
    } finally {
      events.close();
    }
  });

  it('a socket joined with the client’s signature receives the event of a signed action', async () => {
    const before = await joinsHandled();
    const received: ActionRecord[] = [];
    const events = client
      .connectEvents('key', { wkIdentity: PAIR.wkIdentity, sign: keyKeys })
      .on('tx', (record) => received.push(record));
    try {
      await joinsSettled(before, 1);
      const record = await client.postAction(txBody, { sign: walletKeys });
      await waitFor('the event', () => received.length === 1);
      expect(received).to.deep.equal([record]);
    } finally {
      events.close();
    }
  });

  it('ack(id) on the key socket and ackAction by HTTP answer the first receipt; the wallet stream socket gets delivered', async () => {
    const delivered: Delivered[] = [];
    const received: ActionRecord[] = [];
    const wallet = client
      .connectEvents('wallet', { wkIdentity: PAIR.wkIdentity, sign: walletKeys, since: { offset: 0 } })
      .onDelivered((event) => delivered.push(event));
    const key = client
      .connectEvents('key', { wkIdentity: PAIR.wkIdentity, sign: keyKeys })
      .on('tx', (record) => received.push(record));
    try {
      await Promise.all([wallet.joined, key.joined]);
      const record = await client.postAction(txBody, { sign: walletKeys });
      await waitFor('the event', () => received.some(({ id }) => id === record.id));
      const receipt = await key.ack(record.id);
      expect(receipt.side).to.equal('key');
      expect(await client.ackAction(PAIR.wkIdentity, record.id, { sign: keyKeys })).to.deep.equal({
        id: record.id,
        wkIdentity: PAIR.wkIdentity,
        action: 'tx',
        epoch: record.epoch,
        offset: record.offset,
        delivered: receipt,
      });
      await waitFor('delivered', () => delivered.length === 1);
      expect(delivered).to.deep.equal([
        {
          wkIdentity: PAIR.wkIdentity,
          id: record.id,
          action: 'tx',
          epoch: record.epoch,
          offset: record.offset,
          ...receipt,
        },
      ]);
      expect((await client.getAction(PAIR.wkIdentity)).delivered).to.deep.equal(receipt);
      expect(await refusal(key.ack('AAAAAAAAAAAAAAAAAAAAAA'), JoinError)).to.include({ code: 'NOT_FOUND' });
      expect(await refusal(client.ackAction(PAIR.wkIdentity, record.id))).to.include({
        status: 401,
        code: 'AUTH_REQUIRED',
      });
    } finally {
      wallet.close();
      key.close();
    }
  });

  it('an unsigned join is refused with AUTH_REQUIRED in the acknowledgement: joined rejects, reported, not tried again', async () => {
    const before = await joinsHandled('unauthorized');
    const refused: string[] = [];
    const events = client.connectEvents('key', {
      wkIdentity: PAIR.wkIdentity,
      rejoinDelayMs: 20,
      onRefused: (code) => refused.push(code),
    });
    try {
      expect(await refusal(events.joined, JoinError)).to.include({ code: 'AUTH_REQUIRED' });
      await joinsSettled(before, 1, 'unauthorized');
      expect(refused).to.deep.equal(['AUTH_REQUIRED']);
      await waitFor('the socket to stop', () => !events.socket.active);
      // Well past rejoinDelayMs: no second attempt.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await joinsHandled('unauthorized')).to.equal(before + 1);
    } finally {
      events.close();
    }
  });
});

describe('client: a join refused with an acknowledgement', () => {
  /** A socket.io server answering each join on `/v1/socket/key` with the next of `answers`, then disconnecting. */
  async function refusingServer(answers: object[]) {
    const http = createServer();
    const io = new Server(http, { path: '/v1/socket/key' });
    const joins: unknown[] = [];
    io.on('connection', (socket) =>
      socket.on('join', (data: unknown, ack: (answer: object) => void) => {
        joins.push(data);
        ack(answers[joins.length - 1] ?? { ok: true });
        socket.disconnect(true);
      }),
    );
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    return { url, joins, close: () => io.close() };
  }

  it('an AUTH_* code stops reconnecting, rejects joined and is reported; another code is retried', async () => {
    const server = await refusingServer([
      { ok: false, code: 'RATE_LIMITED' },
      { ok: false, code: 'AUTH_INVALID' },
    ]);
    const refused: string[] = [];
    const events = new RelayClient({ baseUrl: server.url }).connectEvents('key', {
      wkIdentity: PAIR.wkIdentity,
      sign: walletKeys,
      rejoinDelayMs: 20,
      onRefused: (code) => refused.push(code),
    });
    try {
      // The first refusal is retried: joined waits on, and settles with the second.
      expect(await refusal(events.joined, JoinError)).to.include({ code: 'AUTH_INVALID' });
      expect(refused).to.deep.equal(['AUTH_INVALID']);
      expect(events.socket.active).to.equal(false);
      expect(server.joins).to.have.length(2);
      // Each connection's join is signed afresh.
      const nonces = server.joins.map((join) => JSON.parse((join as { message: string }).message).nonce);
      expect(nonces[0]).to.not.equal(nonces[1]);
    } finally {
      events.close();
      await server.close();
    }
  });

  it('close() before any acknowledgement rejects joined with CLOSED_BEFORE_JOIN', async () => {
    const server = await refusingServer([]);
    const events = new RelayClient({ baseUrl: server.url }).connectEvents('key', {
      wkIdentity: PAIR.wkIdentity,
    });
    try {
      events.close();
      expect(await refusal(events.joined, JoinError)).to.include({ code: CLOSED_BEFORE_JOIN });
      expect(server.joins).to.deep.equal([]);
    } finally {
      await server.close();
    }
  });
});
