import { expect } from 'chai';
import { API_PROFILES } from '../../src/core/config/config.js';
import { errorBody, get, post, startTestApi, type TestApi } from '../helpers/api.js';
import { actionRecord, readBody, readData } from '../helpers/profile.js';
import { commandsDuring, redis } from '../helpers/redis.js';
import { itRejectsBodies, type InvalidCase } from '../helpers/rejects.js';

const request = { chain: 'btc', wkIdentity: 'bc1qpair', action: 'tx', payload: '0200abff', path: '0-0' };

function fieldsOf(res: { body: { error: { details: { field: string }[] } } }): string[] {
  return res.body.error.details.map((d) => d.field);
}

for (const profile of API_PROFILES) {
  describe(`POST /v1/action and GET /v1/action/{id}, API_PROFILE=${profile}`, () => {
    let api: TestApi;
    before(async () => {
      api = await startTestApi({ ACTION_TTL_SECONDS: '900', API_PROFILE: profile });
    });
    after(() => api.stop());

    it('a GET is one Redis script that consumes the global rate limit and reads the mailbox', async () => {
      const stored = (await post(api.url, '/v1/action', request)).body.data;
      let res: Awaited<ReturnType<typeof get>> | undefined;
      const commands = await commandsDuring(async () => {
        res = await get(api.url, '/v1/action/bc1qpair');
      });
      expect(res!.body).to.deep.equal(readBody(profile, stored));
      expect(res!.headers.get('ratelimit-remaining')).to.match(/^\d+$/);
      const both = commands.filter(
        (args) => args.includes('relay:rl:api:127.0.0.1') || args.includes('relay:action:bc1qpair'),
      );
      expect(both).to.have.length(1);
      expect(both[0]![0]!.toLowerCase()).to.be.oneOf(['eval', 'evalsha']);
      expect(both[0]).to.include.members(['relay:rl:api:127.0.0.1', 'relay:action:bc1qpair']);
    });

    it('stores the action with a random id, createdAt/expiresAt and its TTL; GET returns the same record', async () => {
      const utxos = [
        {
          txid: 'ab'.repeat(32),
          vout: 1,
          scriptPubKey: '0014ab',
          satoshis: '1000',
          confirmations: 3,
          coinbase: false,
        },
        { txid: 'cd'.repeat(32), vout: '100000', satoshis: 5 },
      ];
      const before = Date.now();
      const res = await post(api.url, '/v1/action', { ...request, utxos, ignored: true });
      expect(res.status).to.equal(200);
      const { id, createdAt, expiresAt, epoch } = res.body.data;
      expect(Object.keys(res.body.data)[0]).to.equal('id');
      expect(id).to.match(/^[A-Za-z0-9_-]{22,36}$/);
      // A request to the key: the first record of the pair's key direction.
      expect(epoch).to.match(/^[A-Za-z0-9_-]{8,32}$/);
      expect(res.body.data).to.deep.equal({
        ...actionRecord(profile, { id, ...request, utxos, createdAt, expiresAt }),
        epoch,
        offset: 1,
      });
      expect(Date.parse(createdAt)).to.be.within(before - 1000, Date.now());
      expect(Date.parse(expiresAt) - Date.parse(createdAt)).to.equal(900_000);
      expect(createdAt).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

      expect(JSON.parse((await redis().get('relay:action:bc1qpair'))!)).to.deep.equal(res.body.data);
      expect(await redis().ttl('relay:action:bc1qpair')).to.be.within(895, 900);

      const read = await get(api.url, '/v1/action/bc1qpair');
      expect(read.body).to.deep.equal(readBody(profile, res.body.data));
    });

    it('reads never delete: both apps can read the mailbox repeatedly', async () => {
      await post(api.url, '/v1/action', request);
      expect((await get(api.url, '/v1/action/bc1qpair')).status).to.equal(200);
      expect((await get(api.url, '/v1/action/bc1qpair')).status).to.equal(200);
      expect(await redis().exists('relay:action:bc1qpair')).to.equal(1);
    });

    it('a reply replaces the request entirely (no stale path or utxos)', async () => {
      await post(api.url, '/v1/action', { ...request, utxos: [{ txid: 'aa', vout: 0 }] });
      const reply = { chain: 'btc', wkIdentity: 'bc1qpair', action: 'txid', payload: 'deadbeef' };
      await post(api.url, '/v1/action', reply);
      const read = await get(api.url, '/v1/action/bc1qpair');
      const { id, createdAt, expiresAt, epoch } = readData(profile, read);
      // The first record of the wallet direction: its own epoch and offsets.
      expect(readData(profile, read)).to.deep.equal({
        ...actionRecord(profile, { id, ...reply, createdAt, expiresAt }),
        epoch,
        offset: 1,
      });
      expect(epoch).to.match(/^[A-Za-z0-9_-]{8,32}$/);
    });

    it('every POST is a new record with its own id and push intent, even two in one millisecond', async () => {
      const token = { wkIdentity: 'bc1qsame', keyToken: 'fcm-device-same' };
      expect((await post(api.url, '/v1/token', token)).status).to.equal(200);
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => post(api.url, '/v1/action', { ...request, wkIdentity: 'bc1qsame' })),
      );
      const ids = answers.map((res) => res.body.data.id as string);
      expect(new Set(ids).size).to.equal(20);
      const stored = JSON.parse((await redis().get('relay:action:bc1qsame'))!);
      expect(ids).to.include(stored.id);
      // One push intent per record (one job each, the job id being the record's): none is taken for a repeat of
      // another from the same millisecond.
      const intents = await redis().xrange('relay:push:intents', '-', '+');
      expect(intents.map(([, fields]) => fields[1]).sort()).to.deep.equal([...ids].sort());
    });

    it('keeps a 1,000,000-character payload byte for byte (body up to 2 MB)', async () => {
      const payload = JSON.stringify({ userOp: 'é"\\\n'.repeat(10) + 'x'.repeat(1_000_000 - 60) }).slice(
        0,
        1_000_000,
      );
      const res = await post(api.url, '/v1/action', {
        chain: 'eth',
        wkIdentity: 'pair',
        action: 'evmsigned',
        payload,
      });
      expect(res.status).to.equal(200);
      expect(readData(profile, await get(api.url, '/v1/action/pair')).payload).to.equal(payload);
    });

    it('404 for an empty or expired mailbox', async () => {
      const res = await get(api.url, '/v1/action/nobody');
      expect(res.status).to.equal(404);
      expect(res.body).to.deep.equal(
        errorBody(res, 'NOT_FOUND', 'The action mailbox of this pair is empty or expired.'),
      );
    });

    it('accepts unknown chains and action types with generic checks only', async () => {
      const res = await post(api.url, '/v1/action', {
        chain: 'newchain',
        wkIdentity: 'p',
        action: 'tx',
        payload: 'not hex',
        path: '',
      });
      expect(res.status).to.equal(400); // tx still needs a non-empty path
      expect(fieldsOf(res)).to.include('/body/path');
      const ok = await post(api.url, '/v1/action', {
        chain: 'newchain',
        wkIdentity: 'p',
        action: 'tx',
        payload: 'not hex',
        path: '1-2',
      });
      expect(ok.status).to.equal(200);
    });

    it('an evmsigningrequest on an EVM chain with a JSON object payload is accepted', async () => {
      const res = await post(api.url, '/v1/action', {
        chain: 'polygon',
        wkIdentity: 'p',
        action: 'evmsigningrequest',
        payload: '{"to":"0x0"}',
        path: '',
      });
      expect(res.status).to.equal(200);
      expect(res.body.data.path).to.equal('');
    });

    describe('validation: 400 with the failing field, nothing written', () => {
      const cases: InvalidCase[] = [
        ['missing chain', { ...request, chain: undefined }, '/body/chain'],
        ['missing wkIdentity', { ...request, wkIdentity: undefined }, '/body/wkIdentity'],
        ['missing action', { ...request, action: undefined }, '/body/action'],
        ['missing payload', { ...request, payload: undefined }, '/body/payload'],
        ['empty payload', { ...request, payload: '' }, '/body/payload'],
        ['numeric payload', { ...request, payload: 12 }, '/body/payload'],
        ['payload over 1,000,000 characters', { ...request, payload: 'ab'.repeat(500_001) }, '/body/payload'],
        ['action with a slash', { ...request, action: 'a/b' }, '/body/action'],
        ['tx without path', { ...request, path: undefined }, '/body/path'],
        ['tx with an empty path', { ...request, path: '' }, '/body/path'],
        ['path with a dot', { ...request, path: '0.0' }, '/body/path'],
        ['non-hex tx payload on a UTXO chain', { ...request, payload: 'zz' }, '/body/payload'],
        ['odd-length hex tx payload', { ...request, payload: 'abc' }, '/body/payload'],
        [
          'tx on an EVM chain that is not a JSON object',
          { ...request, chain: 'eth', payload: '[1]' },
          '/body/payload',
        ],
        [
          'evmsigningrequest with unparseable JSON',
          { ...request, chain: 'base', action: 'evmsigningrequest', payload: '{"a":' },
          '/body/payload',
        ],
        ['utxos not an array', { ...request, utxos: {} }, '/body/utxos'],
        ['utxo without txid', { ...request, utxos: [{ vout: 0 }] }, '/body/utxos/0/txid'],
        [
          'utxo txid over 200 chars',
          { ...request, utxos: [{ txid: 'a'.repeat(201), vout: 0 }] },
          '/body/utxos/0/txid',
        ],
        ['negative vout', { ...request, utxos: [{ txid: 'a', vout: -1 }] }, '/body/utxos/0/vout'],
        ['vout above 100000', { ...request, utxos: [{ txid: 'a', vout: '100001' }] }, '/body/utxos/0/vout'],
        ['fractional vout', { ...request, utxos: [{ txid: 'a', vout: 1.5 }] }, '/body/utxos/0/vout'],
        [
          'non-hex scriptPubKey',
          { ...request, utxos: [{ txid: 'a', vout: 0, scriptPubKey: 'xy' }] },
          '/body/utxos/0/scriptPubKey',
        ],
        [
          'satoshis above 1e18',
          { ...request, utxos: [{ txid: 'a', vout: 0, satoshis: '1000000000000000001' }] },
          '/body/utxos/0/satoshis',
        ],
        [
          'negative satoshis',
          { ...request, utxos: [{ txid: 'a', vout: 0, satoshis: -5 }] },
          '/body/utxos/0/satoshis',
        ],
        [
          'coinbase as a string',
          { ...request, utxos: [{ txid: 'a', vout: 0, coinbase: 'yes' }] },
          '/body/utxos/0/coinbase',
        ],
        ['10,001 utxos', { ...request, utxos: Array(10_001).fill({ txid: 'a', vout: 0 }) }, '/body/utxos'],
      ];
      itRejectsBodies(() => api, '/v1/action', cases, 'relay:action:*');

      it('a body over 2 MB → 413, nothing written', async () => {
        const res = await post(api.url, '/v1/action', { ...request, payload: 'ab'.repeat(1_100_000) });
        expect(res.status).to.equal(413);
        expect(res.body).to.deep.equal(
          errorBody(
            res,
            'PAYLOAD_TOO_LARGE',
            'The request body is larger than this endpoint accepts (2 MiB once decoded).',
          ),
        );
        expect(await redis().keys('relay:action:*')).to.deep.equal([]);
      });

      it('broken JSON, non-object bodies and wrong content type', async () => {
        expect((await post(api.url, '/v1/action', '{"chain"')).body.error.code).to.equal('INVALID_JSON');
        expect((await post(api.url, '/v1/action', 'null')).body.error.code).to.equal('INVALID_JSON');
        expect((await post(api.url, '/v1/action', '[]')).body.error.code).to.equal('INVALID_JSON');
        const form = await post(api.url, '/v1/action', 'chain=btc', {
          'content-type': 'application/x-www-form-urlencoded',
        });
        expect(form.status).to.equal(415);
        expect(await redis().keys('relay:action:*')).to.deep.equal([]);
      });

      it('GET validates the id after URL decoding', async () => {
        for (const id of ['a%2Fb', 'a%20b', '%E2%82%AC', 'x'.repeat(201)]) {
          const res = await get(api.url, `/v1/action/${id}`);
          expect(res.status, id).to.equal(400);
          expect(res.body.error.code).to.equal('INVALID_PARAMETER');
          expect(fieldsOf(res)).to.include('/params/id');
        }
      });
    });
  });
}
