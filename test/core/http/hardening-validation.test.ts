import { createServer } from 'node:http';
import { expect } from 'chai';
import { JSON_LIMITS } from '../../../src/core/http/body.js';
import { ACTION_BODY_LIMIT } from '../../../src/mailbox/routes.js';
import { listen } from '../../../src/core/http/listen.js';
import { captureConsole, LIBRARY_LINES_FOLLOWED } from '../../../src/core/capture-console.js';
import { createLogger } from '../../../src/core/log.js';
import { errorBody, get, post, startTestApi, type TestApi } from '../../helpers/api.js';
import { redis } from '../../helpers/redis.js';

const action = { chain: 'btc', wkIdentity: 'pair-1', action: 'txid', payload: 'abcd' };

const VOUT = 'must be an integer from 0 to 100000, as a number or a digit string';
const SATOSHIS = 'must be an integer from 0 to 10^18, as a number or a digit string';

/** An action with `count` utxos whose vout and satoshis are both malformed. */
function badUtxos(count: number): string {
  const utxos = Array.from({ length: count }, (_, i) => ({ txid: 'ab', vout: `v${i}`, satoshis: 's' }));
  return JSON.stringify({ ...action, utxos });
}

/** The details of the first `items` bad utxos, in order. */
function utxoDetails(items: number) {
  return Array.from({ length: items }, (_, i) => [
    { field: `/body/utxos/${i}/vout`, message: VOUT },
    { field: `/body/utxos/${i}/satoshis`, message: SATOSHIS },
  ]).flat();
}

/** `depth` nested arrays under one key of an action: the body nests depth + 1 deep. */
function nested(depth: number): string {
  return `{"chain":"btc","wkIdentity":"pair-1","action":"txid","payload":"ab","extra":${'['.repeat(depth)}${']'.repeat(depth)}}`;
}

/**
 * Time bounds here are generous on purpose (the CI machine is shared and slow): they tell "answered in a
 * moment" from "held the event loop for seconds", which is what the relay did before (12-14 s for 10,000 bad
 * utxos, 0.6-1.1 s of parsing per 2 MiB nested body), not a performance target.
 */
const MOMENT_MS = 3000;

describe('HTTP hardening: validation and parsing cost', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(() => api.stop());

  describe('validation is linear and its details bounded', () => {
    it('10,000 utxos with a bad vout and satoshis each: 400 with the first 20 details, at once, /healthz answering meanwhile', async () => {
      const started = performance.now();
      const refused = post(api.url, '/v1/action', badUtxos(10_000));
      const health = get(api.url, '/healthz').then((res) => ({ res, ms: performance.now() - started }));
      const [res, healthz] = await Promise.all([refused, health]);
      const ms = performance.now() - started;
      expect(res.status).to.equal(400);
      expect(res.body).to.deep.equal(
        errorBody(res, 'INVALID_PARAMETER', 'A field of the request body is invalid.'),
      );
      expect(res.body.error.details).to.deep.equal(utxoDetails(10));
      expect(ms).to.be.below(MOMENT_MS);
      expect(healthz.res.status).to.equal(200);
      expect(healthz.ms).to.be.below(MOMENT_MS);
      expect(await redis().keys('relay:action:*')).to.deep.equal([]);
    });

    it('20,000 of them: the count first, then the first bad items, as fast', async () => {
      const started = performance.now();
      const res = await post(api.url, '/v1/action', badUtxos(20_000));
      expect(performance.now() - started).to.be.below(MOMENT_MS);
      expect(res.status).to.equal(400);
      expect(res.body.error.details).to.deep.equal([
        { field: '/body/utxos', message: 'must NOT have more than 10000 items' },
        ...utxoDetails(10).slice(0, 19),
      ]);
    });

    it('a bad item after thousands of good ones is still named', async () => {
      const utxos = [
        ...Array.from({ length: 9999 }, () => ({ txid: 'ab', vout: 1, satoshis: '5' })),
        { txid: 'ab', vout: -1 },
      ];
      const res = await post(api.url, '/v1/action', { ...action, utxos });
      expect(res.status).to.equal(400);
      expect(res.body.error.details).to.deep.equal([{ field: '/body/utxos/9999/vout', message: VOUT }]);
    });
  });

  describe('a shape no request needs (nesting, fields, values) is refused before parsing', () => {
    it(`${JSON_LIMITS.depth} deep is parsed (the unknown field dropped); one more is 400 INVALID_JSON`, async () => {
      const fits = await post(api.url, '/v1/action', nested(JSON_LIMITS.depth - 1));
      expect(fits.status).to.equal(200);
      expect(JSON.parse((await redis().get('relay:action:pair-1'))!)).to.not.have.property('extra');
      const deeper = await post(api.url, '/v1/action', nested(JSON_LIMITS.depth));
      expect(deeper.body).to.deep.equal(
        errorBody(deeper, 'INVALID_JSON', 'The request body is nested deeper than any request needs.'),
      );
    });

    it('brackets inside strings, escaped quotes and a trailing backslash included, do not count', async () => {
      // Its JSON ends in an escaped backslash before the closing quote: the string ends there, not later.
      const payload = `\\"${'['.repeat(50)}"${'{'.repeat(50)}\\`;
      const res = await post(api.url, '/v1/action', { ...action, payload });
      expect(res.status).to.equal(200);
      expect(JSON.parse((await redis().get('relay:action:pair-1'))!).payload).to.equal(payload);
    });

    it('a 2 MiB nested body is refused at once', async () => {
      const depth = ACTION_BODY_LIMIT / 2 - 4;
      const body = `{"a":${'['.repeat(depth)}${']'.repeat(depth)}}`;
      const started = performance.now();
      const res = await post(api.url, '/v1/action', body);
      expect(performance.now() - started).to.be.below(MOMENT_MS);
      expect(res.body).to.deep.equal(
        errorBody(res, 'INVALID_JSON', 'The request body is nested deeper than any request needs.'),
      );
    });

    it(`an object of ${JSON_LIMITS.fields} fields is parsed; one more is 400 INVALID_JSON, at once even at 2 MiB`, async () => {
      const withFields = (count: number) =>
        JSON.stringify({
          ...action,
          extra: Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, 0])),
        });
      expect((await post(api.url, '/v1/action', withFields(JSON_LIMITS.fields))).status).to.equal(200);
      const wide = await post(api.url, '/v1/action', withFields(JSON_LIMITS.fields + 1));
      expect(wide.body).to.deep.equal(
        errorBody(
          wide,
          'INVALID_JSON',
          'The request body has an object with more fields than any request needs.',
        ),
      );
      const keys = `{${Array.from({ length: 150_000 }, (_, i) => `"k${i}":0`).join(',')}}`;
      const started = performance.now();
      const res = await post(api.url, '/v1/action', keys);
      expect(performance.now() - started).to.be.below(MOMENT_MS);
      expect(res.body.error.code).to.equal('INVALID_JSON');
    });

    it(`the largest valid action (10,000 utxos of every field) is stored; more than ${JSON_LIMITS.values} values are 400`, async () => {
      const utxo = {
        txid: 'ab',
        vout: 1,
        scriptPubKey: 'ab',
        satoshis: '5',
        confirmations: 1,
        coinbase: false,
      };
      const largest = { ...action, utxos: Array.from({ length: 10_000 }, () => utxo) };
      expect((await post(api.url, '/v1/action', largest)).status).to.equal(200);
      const values = `{"a":[${Array.from({ length: JSON_LIMITS.values + 1 }, () => '0').join(',')}]}`;
      const many = await post(api.url, '/v1/action', values);
      expect(many.body).to.deep.equal(
        errorBody(many, 'INVALID_JSON', 'The request body has more values than any request needs.'),
      );
    });

    it('a __proto__ key at any depth is INVALID_JSON', async () => {
      for (const body of [
        '{"__proto__":{"x":1}}',
        `{"chain":"btc","utxos":[{"txid":"ab","\\u005f_proto__":{}}]}`,
      ]) {
        const res = await post(api.url, '/v1/action', body);
        expect(res.body, body).to.deep.equal(
          errorBody(res, 'INVALID_JSON', 'The request body is not valid JSON.'),
        );
      }
    });
  });
});

describe('HTTP hardening: server errors and library output', () => {
  it('a server error once listening (an accept failing with EMFILE) is logged every time; the server goes on serving', async () => {
    const lines: Record<string, unknown>[] = [];
    const server = createServer((_req, res) => res.end('ok'));
    const url = await listen(
      server,
      0,
      '127.0.0.1',
      'PORT',
      createLogger('info', {}, (line) => lines.push(JSON.parse(line))),
    );
    try {
      // What net.Server does when accept() fails: under a connection flood, again and again.
      for (let i = 0; i < 3; i++)
        server.emit('error', Object.assign(new Error('accept EMFILE'), { code: 'EMFILE' }));
      expect(await (await fetch(url)).text()).to.equal('ok');
      expect(lines.map(({ level, msg, code, variable }) => ({ level, msg, code, variable }))).to.deep.equal(
        Array.from({ length: 3 }, () => ({
          level: 'error',
          msg: 'server error',
          code: 'EMFILE',
          variable: 'PORT',
        })),
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it(`captureConsole follows the last ${LIBRARY_LINES_FOLLOWED} distinct lines: an older one is logged again`, () => {
    const lines: Record<string, unknown>[] = [];
    const log = createLogger('info', {}, (line) => lines.push(JSON.parse(line)));
    // eslint-disable-next-line no-console -- the test replaces the console and puts it back
    const saved = [console.log, console.info, console.warn, console.error, console.debug] as const;
    try {
      captureConsole(log, 60_000);
      // eslint-disable-next-line no-console -- what a library does
      const print = (text: string) => console.warn(text);
      print('line 0');
      print('line 0');
      for (let i = 1; i <= LIBRARY_LINES_FOLLOWED; i++) print(`line ${i}`);
      print('line 0');
      print(`line ${LIBRARY_LINES_FOLLOWED}`);
    } finally {
      // eslint-disable-next-line no-console -- putting the console back
      [console.log, console.info, console.warn, console.error, console.debug] = saved;
    }
    const logged = lines.filter((line) => line.msg === 'library output').map((line) => line.text);
    expect(logged).to.deep.equal([
      ...Array.from({ length: LIBRARY_LINES_FOLLOWED + 1 }, (_, i) => `line ${i}`),
      'line 0',
    ]);
  });
});
