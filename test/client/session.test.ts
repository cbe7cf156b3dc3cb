import { expect } from 'chai';
import {
  JoinError,
  RelayClient,
  RelayError,
  SESSION_CLOSED,
  SessionEnded,
  type ActionRecord,
  type PairKeys,
  type RelaySession,
} from '../../client/index.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { get, startTestApi, type TestApi } from '../helpers/api.js';
import { checkedFetch, type Sent } from '../helpers/client-fetch.js';
import { redis } from '../helpers/redis.js';
import { KEY_PRIVATE, PAIR, pairOf, publicKeyOf, WALLET_PRIVATE } from '../helpers/signing.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The client's sessions (client/relay-client.ts, docs/api.md#sessions) against a real relay with SESSION_KEYS
 * and AUTH_READS=required: the exchange, the token on the pair's reads, writes and joins, renewal before the end
 * from the lifetime the relay answered, and SessionEnded once the relay says the session ended.
 */

const keys = keysFor('relay:');
const SESSION_KEYS = `k1:${Buffer.alloc(32, 7).toString('base64')}`;
const walletKeys: PairKeys = {
  privateKey: WALLET_PRIVATE,
  walletPublicKey: publicKeyOf(WALLET_PRIVATE),
  keyPublicKey: publicKeyOf(KEY_PRIVATE),
};
const keyKeys: PairKeys = { ...walletKeys, privateKey: KEY_PRIVATE.toString('hex') };
const txBody = { chain: 'btc', wkIdentity: PAIR.wkIdentity, action: 'tx', payload: 'deadbeef', path: '0-0' };
const syncRecord = {
  chain: 'btc',
  walletIdentity: PAIR.walletIdentity,
  keyXpub: `xpub${'A'.repeat(107)}`,
  wkIdentity: PAIR.wkIdentity,
};

/**
 * A pair of its own for a test that revokes: a pod answers from a side's revocation stamp for a second, which
 * outlasts the flush of Redis between tests.
 */
function ownPair(seed: number) {
  const [walletPrivate, keyPrivate] = [Buffer.alloc(32, seed), Buffer.alloc(32, seed + 1)];
  const walletKeys: PairKeys = {
    privateKey: walletPrivate,
    walletPublicKey: publicKeyOf(walletPrivate),
    keyPublicKey: publicKeyOf(keyPrivate),
  };
  return {
    pair: pairOf(walletPrivate, keyPrivate),
    walletKeys,
    keyKeys: { ...walletKeys, privateKey: keyPrivate },
  };
}

/** The JSON of a compact JWT's header and claims. */
function decoded(token: string) {
  const [header, claims, signature] = token.split('.');
  const json = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  return { header: json(header!), claims: json(claims!), signature: signature! };
}

/** The error `call` is rejected with, of `type`. */
async function refusal<E>(call: Promise<unknown>, type: new (...args: never[]) => E): Promise<E> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).to.be.instanceOf(type);
  return err as E;
}

describe('client: sessions on a relay with SESSION_KEYS and AUTH_READS=required', function () {
  // Renewal waits for a timer of seconds; every wait is on a condition.
  this.timeout(30_000);

  let api: TestApi;
  let relay: RelayClient;
  const sent: Sent[] = [];
  const sessions: RelaySession[] = [];
  /** The requests sent from `from` on, as method, path and whether they carried `token`. */
  const since = (from: number, token?: string) =>
    sent.slice(from).map(({ method, path, authorization }) => ({
      call: `${method} ${path}`,
      bearer: authorization === null ? null : authorization === `Bearer ${token}`,
    }));

  before(async () => {
    api = await startTestApi({ SESSION_KEYS, AUTH_READS: 'required', SESSION_TTL_SECONDS: '60' });
    relay = new RelayClient({ baseUrl: api.url, fetch: checkedFetch(api.url, sent) });
  });
  afterEach(() => {
    for (const session of sessions.splice(0)) session.close();
  });
  after(() => api?.stop());

  /** A read with `token` once the pod refuses it: a pod answers from a side's stamps for up to a second. */
  const revocationShown = (wkIdentity: string, token: string) =>
    waitFor('the revocation to show', async () => {
      const read = await get(api.url, `/v1/action/${wkIdentity}`, { authorization: `Bearer ${token}` });
      return read.status === 401 && read;
    });

  async function open(side: 'key' | 'wallet', pairKeys: PairKeys, renewBeforeSeconds?: number) {
    const ended: SessionEnded[] = [];
    const session = await relay.session(side, pairKeys, {
      ...(renewBeforeSeconds !== undefined && { renewBeforeSeconds }),
      onEnded: (err) => ended.push(err),
    });
    sessions.push(session);
    return { session, ended };
  }

  it('exchange: a challenge, then the signed challenge for a token bound to the pair and the side', async () => {
    const from = sent.length;
    const { session } = await open('wallet', walletKeys);
    const { grant } = session;
    expect(grant).to.deep.equal({
      token: grant.token,
      tokenType: 'Bearer',
      expiresAt: grant.expiresAt,
      expiresIn: 60,
      wkIdentity: PAIR.wkIdentity,
      side: 'wallet',
    });
    expect(session.subject).to.deep.equal({ kind: 'pair', identity: PAIR.wkIdentity });
    expect(session.side).to.equal('wallet');
    const { header, claims } = decoded(grant.token);
    expect(header).to.deep.equal({ alg: 'HS256', typ: 'JWT', kid: 'k1' });
    expect(claims).to.include({ sub: PAIR.wkIdentity, kind: 'pair', side: 'wallet', aud: 'multisig-relay' });
    expect(claims.exp - claims.iat).to.equal(60);
    expect(Date.parse(grant.expiresAt)).to.equal(claims.exp * 1000);
    // Neither the challenge nor the exchange carries a token; the exchange signs the challenge it was given.
    expect(since(from)).to.deep.equal([
      { call: 'POST /v1/session/challenge', bearer: null },
      { call: 'POST /v1/session', bearer: null },
    ]);
    const exchanged = JSON.parse(sent[from + 1]!.body!);
    const message = JSON.parse(exchanged.message);
    expect(Object.keys(exchanged)).to.deep.equal([
      'wkIdentity',
      'side',
      'challenge',
      'signature',
      'message',
      'publicKey',
      'witnessScript',
    ]);
    expect(message).to.include({ action: 'session', identity: PAIR.wkIdentity, nonce: exchanged.challenge });
    expect(JSON.parse(sent[from]!.body!)).to.deep.equal({ wkIdentity: PAIR.wkIdentity, side: 'wallet' });
    // The challenge is spent: Redis keeps it marked used until it expires.
    expect(await redis().get(keys.sessionChallenge(PAIR.wkIdentity, exchanged.challenge))).to.equal('used');
  });

  it('the pair’s reads and writes carry the token; a plain client’s read is 401 AUTH_REQUIRED', async () => {
    const { session } = await open('wallet', walletKeys);
    const token = session.grant.token;
    const plain = await refusal(relay.getAction(PAIR.wkIdentity), RelayError);
    expect(plain).to.include({ status: 401, code: 'AUTH_REQUIRED' });

    const from = sent.length;
    const record = await session.postAction(txBody);
    expect(JSON.parse((await redis().get(keys.action(PAIR.wkIdentity)))!)).to.deep.equal(record);
    expect(await session.getAction(PAIR.wkIdentity)).to.deep.equal(record);
    expect(await refusal(session.getRecoveryPub(PAIR.wkIdentity), RelayError)).to.include({
      status: 404,
      code: 'NOT_FOUND',
    });
    expect(
      await session.postToken({ wkIdentity: PAIR.wkIdentity, walletToken: 'fcm-wallet-1' }),
    ).to.deep.equal({
      wkIdentity: PAIR.wkIdentity,
      keyTokens: 0,
      walletTokens: 1,
    });
    // Market data and the like go as a plain client's: the token is the pair's alone.
    expect(await session.health()).to.deep.equal({ status: 'ok' });
    expect(since(from, token)).to.deep.equal([
      { call: 'POST /v1/action', bearer: true },
      { call: `GET /v1/action/${PAIR.wkIdentity}`, bearer: true },
      { call: `GET /v1/recoverypub/${PAIR.wkIdentity}`, bearer: true },
      { call: 'POST /v1/token', bearer: true },
      { call: 'GET /healthz', bearer: null },
    ]);
  });

  it('another pair’s read goes without the token (401 AUTH_REQUIRED), a signed write without it too', async () => {
    const { session } = await open('key', keyKeys);
    const from = sent.length;
    const other = 'bc1qwqdg6squsna38e46795at95yu9atm8azzmyvckulcc7kytlcckxswvvzej';
    expect(await refusal(session.getAction(other), RelayError)).to.include({
      status: 401,
      code: 'AUTH_REQUIRED',
    });
    const txid = { chain: 'btc', wkIdentity: PAIR.wkIdentity, action: 'txid', payload: 'ab'.repeat(32) };
    expect(await session.postAction(txid, { sign: keyKeys })).to.include(txid);
    expect(since(from)).to.deep.equal([
      { call: `GET /v1/action/${other}`, bearer: null },
      { call: 'POST /v1/action', bearer: null },
    ]);
  });

  it('a socket of the session’s pair and side joins with the token and receives the pair’s events', async () => {
    const { session } = await open('key', keyKeys);
    const { session: wallet } = await open('wallet', walletKeys);
    const received: ActionRecord[] = [];
    const events = session
      .connectEvents('key', { wkIdentity: PAIR.wkIdentity })
      .on('tx', (record) => received.push(record));
    const refusedPlain: string[] = [];
    const plain = relay.connectEvents('key', {
      wkIdentity: PAIR.wkIdentity,
      onRefused: (code) => refusedPlain.push(code),
    });
    try {
      await events.joined;
      expect(await refusal(plain.joined, JoinError)).to.include({ code: 'AUTH_REQUIRED' });
      const replayed = received.length;
      const record = await wallet.postAction(txBody);
      await waitFor('the request on the key socket', () => received.length > replayed);
      expect(received.slice(replayed)).to.deep.equal([record]);
    } finally {
      events.close();
      plain.close();
    }
  });

  it('a wallet session reads the pairing record; a plain read is 401 AUTH_REQUIRED', async () => {
    const { session: key } = await open('key', keyKeys);
    expect(await key.postSync(syncRecord, { sign: keyKeys })).to.deep.equal(syncRecord);
    expect(await refusal(relay.getSync(PAIR.walletIdentity), RelayError)).to.include({
      status: 401,
      code: 'AUTH_REQUIRED',
    });
    const session = await relay.walletSession(WALLET_PRIVATE);
    sessions.push(session);
    expect(session.subject).to.deep.equal({ kind: 'wallet', identity: PAIR.walletIdentity });
    expect(session.grant).to.deep.include({ walletIdentity: PAIR.walletIdentity, side: 'wallet' });
    expect(decoded(session.grant.token).claims).to.include({ sub: PAIR.walletIdentity, kind: 'wallet' });
    const from = sent.length;
    expect(await session.getSync(PAIR.walletIdentity)).to.deep.equal(syncRecord);
    expect(since(from, session.grant.token)).to.deep.equal([
      { call: `GET /v1/sync/${PAIR.walletIdentity}`, bearer: true },
    ]);
  });

  it('renews on its own before the end, from the lifetime the relay answered; the new token is sent', async () => {
    // 60 s tokens renewed 58 s before their end: the first renewal 2 s after the exchange.
    const { session } = await open('wallet', walletKeys, 58);
    const first = session.grant;
    const from = sent.length;
    const renewed = await waitFor('a renewal', () => session.grant !== first && session.grant, 15_000);
    expect(Date.now()).to.be.below(Date.parse(first.expiresAt));
    expect(renewed.token).to.not.equal(first.token);
    expect(renewed).to.deep.include({ tokenType: 'Bearer', expiresIn: 60, side: 'wallet' });
    expect(since(from)).to.deep.equal([
      { call: 'POST /v1/session/challenge', bearer: null },
      { call: 'POST /v1/session', bearer: null },
    ]);
    const read = sent.length;
    expect(await refusal(session.getAction(PAIR.wkIdentity), RelayError)).to.include({ code: 'NOT_FOUND' });
    expect(since(read, renewed.token)).to.deep.equal([
      { call: `GET /v1/action/${PAIR.wkIdentity}`, bearer: true },
    ]);
  });

  it('revoked by the other side: the next call rejects with SessionEnded, onEnded once, no more requests', async () => {
    const { pair, walletKeys, keyKeys } = ownPair(0x61);
    const { session, ended } = await open('wallet', walletKeys);
    const { session: key } = await open('key', keyKeys);
    const { revokedAt } = await key.revoke('wallet');
    expect(await redis().get(keys.sessionRevocation(pair.wkIdentity, 'wallet'))).to.equal(
      String(Date.parse(revokedAt)),
    );
    // Revoking the other side leaves the revoking session as it was.
    expect(await refusal(key.getAction(pair.wkIdentity), RelayError)).to.include({ code: 'NOT_FOUND' });

    // A pod answers from a subject side's stamps for at most a second: reads until the revocation shows.
    const err = await waitFor('the revocation to show', () =>
      session.getAction(pair.wkIdentity).then(
        () => undefined,
        (e: unknown) => (e instanceof SessionEnded ? e : undefined),
      ),
    );
    expect(err).to.be.instanceOf(RelayError);
    expect(err).to.include({ name: 'SessionEnded', reason: 'ended', status: 401, code: 'AUTH_EXPIRED' });
    expect(err.requestId).to.equal(sent.at(-1)!.requestId);
    expect(ended).to.deep.equal([err]);
    expect(await session.ended).to.equal(err);
    const from = sent.length;
    expect(
      await refusal(session.postAction({ ...txBody, wkIdentity: pair.wkIdentity }), SessionEnded),
    ).to.equal(err);
    await refusal(session.renew(), SessionEnded);
    expect(sent.length).to.equal(from);
  });

  it('a socket of a revoked session: its next join is refused, onRefused AUTH_EXPIRED, the session ended', async () => {
    const { pair, walletKeys, keyKeys } = ownPair(0x63);
    const { session, ended } = await open('key', keyKeys);
    const { session: wallet } = await open('wallet', walletKeys);
    const refused: string[] = [];
    const events = session.connectEvents('key', {
      wkIdentity: pair.wkIdentity,
      rejoinDelayMs: 20,
      onRefused: (code) => refused.push(code),
    });
    try {
      await events.joined;
      const token = session.grant.token;
      await wallet.revoke('key');
      await revocationShown(pair.wkIdentity, token);
      // The reconnect joins with the revoked token: refused, and a read then tells the session ended.
      events.socket.io.engine.close();
      await waitFor('the refusal', () => refused.length > 0);
      expect(refused).to.deep.equal(['AUTH_EXPIRED']);
      expect(ended.map((err) => err.reason)).to.deep.equal(['ended']);
      await waitFor('the socket to stop', () => !events.socket.active);
    } finally {
      events.close();
    }
  });

  it('revoke() of its own side and close(): calls reject with SessionEnded SESSION_CLOSED, sending nothing', async () => {
    const { pair, walletKeys } = ownPair(0x65);
    const { session, ended } = await open('wallet', walletKeys);
    const token = session.grant.token;
    const from = sent.length;
    await session.revoke();
    expect(since(from, token)).to.deep.equal([{ call: 'POST /v1/session/revoke', bearer: true }]);
    expect(ended.map((err) => [err.reason, err.code, err.status])).to.deep.equal([
      ['closed', SESSION_CLOSED, 0],
    ]);
    expect(await refusal(session.getAction(pair.wkIdentity), SessionEnded)).to.equal(ended[0]);
    expect(sent.length).to.equal(from + 1);
    // The token is refused by the relay too.
    const res = await revocationShown(pair.wkIdentity, token);
    expect([res.status, res.body.error]).to.deep.equal([
      401,
      {
        code: 'AUTH_EXPIRED',
        message: 'session ended',
        details: [{ field: '/headers/authorization', message: 'session ended' }],
        requestId: res.headers.get('x-request-id'),
      },
    ]);
  });
});

describe('client: sessions on a relay without SESSION_KEYS', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(() => api?.stop());

  it('session() rejects with RelayError 503 UNAVAILABLE; the plain client works as before', async () => {
    const relay = new RelayClient({ baseUrl: api.url, fetch: checkedFetch(api.url) });
    expect(await refusal(relay.session('wallet', walletKeys), RelayError)).to.include({
      status: 503,
      code: 'UNAVAILABLE',
    });
    expect(await refusal(relay.walletSession(WALLET_PRIVATE), RelayError)).to.include({
      status: 503,
      code: 'UNAVAILABLE',
    });
    expect(await relay.postAction(txBody)).to.include(txBody);
  });
});
