import { expect } from 'chai';
import { keysFor } from '../../src/core/redis/keys.js';
import { errorBody, get, post, startTestApi, type TestApi } from '../helpers/api.js';
import { redis } from '../helpers/redis.js';
import { bearer, pairToken, SESSION_ENV } from '../helpers/sessions.js';
import { newNonce, OTHER_PAIR, PAIR, signed } from '../helpers/signing.js';
import { closedAfterEach, connected } from '../helpers/sockets.js';

const client = closedAfterEach();

const keys = keysFor('relay:');
const REQUEST = { chain: 'btc', wkIdentity: PAIR.wkIdentity, action: 'tx', payload: 'aa', path: '0-0' };
const READ = `/v1/action/${PAIR.wkIdentity}`;
const ackPath = (id: string, wkIdentity = PAIR.wkIdentity) => `/v1/action/${wkIdentity}/${id}/ack`;
const credential = (options: Partial<Parameters<typeof signed>[1]> = {}) =>
  signed({}, { purpose: 'ack', by: 'key', identity: PAIR.wkIdentity, ...options });

describe('POST /v1/action/{wkIdentity}/{id}/ack (docs/api.md#post-v1actionwkidentityidack)', function () {
  this.timeout(30_000);
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(() => api.stop());
  beforeEach(() => redis().del(keys.receipts(PAIR.wkIdentity)));

  async function store(): Promise<{ id: string; epoch: string; offset: number }> {
    const res = await post(api.url, '/v1/action', REQUEST);
    expect(res.status).to.equal(200);
    return res.body.data;
  }

  async function nothingRecorded(): Promise<void> {
    expect(await redis().exists(keys.receipts(PAIR.wkIdentity))).to.equal(0);
  }

  it('answers the record and its receipt; a repeat (or a byte-identical resend) answers the first', async () => {
    const record = await store();
    const body = credential();
    const first = await post(api.url, ackPath(record.id), body);
    expect(first.status).to.equal(200);
    const receipt = JSON.parse((await redis().hget(keys.receipts(PAIR.wkIdentity), record.id))!);
    expect(receipt.side).to.equal('key');
    expect(new Date(receipt.at).toISOString()).to.equal(receipt.at);
    expect(first.body).to.deep.equal({
      success: true,
      data: {
        id: record.id,
        wkIdentity: PAIR.wkIdentity,
        action: 'tx',
        epoch: record.epoch,
        offset: record.offset,
        delivered: receipt,
      },
    });
    const resend = await post(api.url, ackPath(record.id), body);
    expect(resend.body).to.deep.equal(first.body);
    // Signed by the wallet's key too: a signature does not say which side signed.
    const again = await post(api.url, ackPath(record.id), credential({ by: 'wallet' }));
    expect(again.body).to.deep.equal(first.body);
    expect(await redis().hgetall(keys.receipts(PAIR.wkIdentity))).to.deep.equal({
      [record.id]: JSON.stringify(receipt),
    });
  });

  it('GET shows delivered once acknowledged, and the ETag changes with the receipt', async () => {
    const record = await store();
    const before = await get(api.url, READ);
    expect(before.body.data).to.not.have.property('delivered');
    const tag = before.headers.get('etag')!;
    expect((await get(api.url, READ, { 'if-none-match': tag })).status).to.equal(304);
    const acked = await post(api.url, ackPath(record.id), credential());
    const after = await get(api.url, READ);
    expect(after.body.data).to.deep.equal({ ...before.body.data, delivered: acked.body.data.delivered });
    const newTag = after.headers.get('etag')!;
    expect(newTag).to.not.equal(tag);
    expect(newTag.startsWith(tag.slice(0, -1) + '.')).to.equal(true);
    // The tag the client has names the record's id, but not its receipt: the record with the receipt.
    const stale = await get(api.url, READ, { 'if-none-match': tag });
    expect(stale.status).to.equal(200);
    expect(stale.body.data).to.deep.equal(after.body.data);
    expect(stale.headers.get('etag')).to.equal(newTag);
    expect((await get(api.url, READ, { 'if-none-match': newTag })).status).to.equal(304);
    expect((await get(api.url, READ, { 'if-none-match': `"other", W/${newTag}` })).status).to.equal(304);
  });

  it('no credential: 401 AUTH_REQUIRED whatever AUTH_MODE says; a bad one: 401; nothing recorded', async () => {
    const record = await store();
    const none = await post(api.url, ackPath(record.id), {});
    expect(none.status).to.equal(401);
    expect(none.body).to.deep.equal(errorBody(none, 'AUTH_REQUIRED'));
    const cases = [
      credential({ purpose: 'action' }),
      credential({ identity: OTHER_PAIR.wkIdentity }),
      credential({ pair: OTHER_PAIR, identity: PAIR.wkIdentity }),
      credential({ timestamp: Date.now() - 3_600_000 }),
      { ...credential(), extra: 1 },
    ];
    for (const body of cases) {
      const res = await post(api.url, ackPath(record.id), body);
      expect(res.status, JSON.stringify(res.body)).to.equal(401);
      expect(res.body.error.code).to.be.oneOf(['AUTH_INVALID', 'AUTH_EXPIRED']);
    }
    const partial = credential();
    delete (partial as Record<string, unknown>).signature;
    expect((await post(api.url, ackPath(record.id), partial)).body.error.code).to.equal('AUTH_INVALID');
    await nothingRecorded();
  });

  it("404 for an unknown id, another pair's id; 400 for a path outside the format; nothing recorded", async () => {
    await store();
    const other = (await post(api.url, '/v1/action', { ...REQUEST, wkIdentity: OTHER_PAIR.wkIdentity })).body
      .data;
    const nonce = newNonce();
    const unknown = await post(api.url, ackPath('AAAAAAAAAAAAAAAAAAAAAA'), credential({ nonce }));
    expect(unknown.status).to.equal(404);
    expect(unknown.body).to.deep.equal(errorBody(unknown, 'NOT_FOUND'));
    // Nothing was recorded, so the nonce was given back: the same credential works once more.
    expect((await post(api.url, ackPath('AAAAAAAAAAAAAAAAAAAAAA'), credential({ nonce }))).status).to.equal(
      404,
    );
    expect((await post(api.url, ackPath(other.id), credential())).status).to.equal(404);
    const bad = await post(api.url, `/v1/action/${PAIR.wkIdentity}/a.b/ack`, credential());
    expect(bad.status).to.equal(400);
    expect(bad.body.error.code).to.equal('INVALID_PARAMETER');
    await nothingRecorded();
  });

  it('AUTH_ROUTES ack=off accepts an ack without a credential', async () => {
    const open = await startTestApi({ AUTH_ROUTES: 'ack=off' });
    try {
      const record = (await post(open.url, '/v1/action', REQUEST)).body.data;
      const res = await post(open.url, ackPath(record.id), {});
      expect(res.status).to.equal(200);
      expect(res.body.data.delivered.side).to.equal('key');
    } finally {
      await open.stop();
    }
  });

  it('an older record still in the stream (replaced in the mailbox) is acknowledged; one trimmed from it is 404', async () => {
    const open = await startTestApi({ AUTH_ROUTES: 'ack=off', STREAM_LENGTH: '3' });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) ids.push((await post(open.url, '/v1/action', REQUEST)).body.data.id);
      const trimmed = await post(open.url, ackPath(ids[0]!), {});
      expect(trimmed.status).to.equal(404);
      expect(trimmed.body).to.deep.equal(errorBody(trimmed, 'NOT_FOUND'));
      await nothingRecorded();
      for (const id of [ids[1]!, ids[2]!]) {
        const res = await post(open.url, ackPath(id), {});
        expect(res.status, id).to.equal(200);
        expect(res.body.data.id).to.equal(id);
      }
      expect(Object.keys(await redis().hgetall(keys.receipts(PAIR.wkIdentity))).sort()).to.deep.equal(
        [ids[1]!, ids[2]!].sort(),
      );
    } finally {
      await open.stop();
    }
  });

  describe('with session tokens', () => {
    let sessions: TestApi;
    let tokens: { key: string; wallet: string };
    before(async () => {
      sessions = await startTestApi(SESSION_ENV);
      tokens = { key: await pairToken(sessions.url, 'key'), wallet: await pairToken(sessions.url, 'wallet') };
    });
    after(() => sessions.stop());

    /** A 401 of a token bound to another side than the record's target side, as a read's binding refusal. */
    function expectBindingRefused(res: Awaited<ReturnType<typeof post>>): void {
      expect(res.status).to.equal(401);
      expect(res.body).to.deep.equal({
        success: false,
        error: {
          code: 'AUTH_INVALID',
          message: 'The session token is invalid.',
          details: [{ field: '/headers/authorization', message: 'refused: binding' }],
          requestId: res.headers.get('x-request-id'),
        },
      });
    }

    /** A socket on `path` whose join carried `token`, and the join's answer. */
    async function joinedWith(path: 'key' | 'wallet', token: string) {
      const socket = client(sessions.url, path, undefined);
      await connected(socket);
      const answer = await socket.socket
        .timeout(5000)
        .emitWithAck('join', { wkIdentity: PAIR.wkIdentity, token });
      return { socket: socket.socket, answer };
    }

    it("a token of the record's target side acknowledges it (HTTP, and a socket joined with it)", async () => {
      const record = (await post(sessions.url, '/v1/action', REQUEST)).body.data;
      const { socket, answer } = await joinedWith('key', tokens.key);
      expect(answer).to.have.property('ok', true);
      const bySocket = (await socket
        .timeout(5000)
        .emitWithAck('ack', { wkIdentity: PAIR.wkIdentity, id: record.id })) as { delivered: object };
      const byHttp = await post(sessions.url, ackPath(record.id), {}, bearer(tokens.key));
      expect(byHttp.status).to.equal(200);
      expect(byHttp.body.data.delivered).to.deep.equal(bySocket.delivered);
    });

    it("the other side's token: 401 AUTH_INVALID (binding) for a record of either direction, nothing recorded", async () => {
      const request = (await post(sessions.url, '/v1/action', REQUEST)).body.data;
      expectBindingRefused(await post(sessions.url, ackPath(request.id), {}, bearer(tokens.wallet)));
      await nothingRecorded();
      const reply = { ...REQUEST, action: 'txid', payload: 'bb' };
      delete (reply as Partial<typeof REQUEST>).path;
      const answer = (await post(sessions.url, '/v1/action', reply)).body.data;
      expectBindingRefused(await post(sessions.url, ackPath(answer.id), {}, bearer(tokens.key)));
      await nothingRecorded();
      const byWallet = await post(sessions.url, ackPath(answer.id), {}, bearer(tokens.wallet));
      expect(byWallet.status).to.equal(200);
      expect(byWallet.body.data).to.include({ id: answer.id, action: 'txid' });
      expect(byWallet.body.data.delivered.side).to.equal('wallet');
      // An unknown id is still a 404 for a token of either side.
      const unknown = await post(sessions.url, ackPath('AAAAAAAAAAAAAAAAAAAAAA'), {}, bearer(tokens.key));
      expect(unknown.status).to.equal(404);
      expect(unknown.body).to.deep.equal(errorBody(unknown, 'NOT_FOUND'));
    });

    it("a socket: the other side's token cannot join this path; joined on its own path, a record to the other side is NOT_FOUND", async () => {
      const record = (await post(sessions.url, '/v1/action', REQUEST)).body.data;
      const refused = (await joinedWith('key', tokens.wallet)).answer;
      expect(refused).to.deep.equal({ ok: false, code: 'AUTH_INVALID' });
      const wallet = await joinedWith('wallet', tokens.wallet);
      expect(wallet.answer).to.have.property('ok', true);
      const acked = await wallet.socket
        .timeout(5000)
        .emitWithAck('ack', { wkIdentity: PAIR.wkIdentity, id: record.id });
      expect(acked).to.deep.equal({ ok: false, code: 'NOT_FOUND' });
      await nothingRecorded();
    });
  });
});
