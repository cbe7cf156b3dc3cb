import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { expect } from 'chai';
import type Router from '@koa/router';
import { buildApp } from '../../src/app.js';
import { API_PROFILES } from '../../src/core/config/config.js';
import { loadConfig } from '../../src/config.js';
import { buildOpenApi } from '../../src/contract/document.js';
import { createLogger } from '../../src/core/log.js';
import { createRedis } from '../../src/core/redis/clients.js';
import { openSessions } from '../../src/identity/index.js';
import { LongPolls } from '../../src/mailbox/index.js';
import { nodeCryptoVerifier } from '../../src/identity/signature.js';
import { openKeys, openStores } from '../../src/stores.js';
import { get, post, startTestApi, testEnv, type TestApi } from '../helpers/api.js';
import { runNode } from '../helpers/child.js';
import { ContractChecker } from '../helpers/contract.js';
import { signed } from '../helpers/signing.js';
import { API_ROUTES } from '../../src/features.js';

/** An answer as the test client sees it: a POST to `target` with the headers every /v1 answer carries. */
const exchange = (target: string, status: number, body: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST',
  target,
  status,
  headers: {
    'x-request-id': 'r',
    'x-content-type-options': 'nosniff',
    'ratelimit-limit': '1',
    'ratelimit-remaining': '1',
    'ratelimit-reset': '1',
    ...headers,
  },
  text: JSON.stringify(body),
});

describe('the OpenAPI document', () => {
  for (const profile of API_PROFILES) {
    it(`passes @redocly/cli lint with the recommended rules: 0 errors, 0 warnings (${profile})`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'relay-openapi-'));
      try {
        const file = join(dir, 'openapi.json');
        writeFileSync(file, JSON.stringify(buildOpenApi(API_ROUTES, profile)));
        const run = await runNode(
          ['node_modules/@redocly/cli/bin/cli.js', 'lint', '--extends=recommended', '--format=json', file],
          { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } as Record<
            string,
            string
          >,
        );
        const report = JSON.parse(run.stdout) as { totals: object; problems: unknown[] };
        expect(report.problems).to.deep.equal([]);
        expect(report.totals).to.deep.equal({ errors: 0, warnings: 0, ignored: 0 });
        expect(run.code).to.equal(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(async () => {
    await api.stop();
  });

  for (const profile of API_PROFILES) {
    it(`API_PROFILE=${profile}: GET /v1/openapi.json serves the profile's document, valid OpenAPI 3.1, with the request-id and rate-limit headers`, async () => {
      const served = await startTestApi({ API_PROFILE: profile });
      try {
        const res = await get(served.url, '/v1/openapi.json');
        expect(res.status).to.equal(200);
        expect(res.headers.get('content-type')).to.equal('application/json; charset=utf-8');
        expect(res.body).to.deep.equal(buildOpenApi(API_ROUTES, profile));
        expect(res.headers.get('x-request-id')).to.be.a('string');
        expect(res.headers.get('ratelimit-limit')).to.equal('100000');
        const result = await new Validator().validate(res.body);
        expect(result.errors ?? [], JSON.stringify(result.errors)).to.deep.equal([]);
        expect(result.valid).to.equal(true);
      } finally {
        await served.stop();
      }
    });
  }

  it('API_PROFILE=ssp-apps: the 200 of GET /v1/sync/{id} is the bare SyncRecord, that of POST /v1/sync the envelope, as the relay answers', async () => {
    const doc = buildOpenApi(API_ROUTES, 'ssp-apps') as { paths: Record<string, Record<string, any>> }; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON
    const ok = (method: string) =>
      doc.paths[method === 'get' ? '/v1/sync/{id}' : '/v1/sync']![method].responses['200'].content[
        'application/json'
      ].schema;
    const record = { $ref: '#/components/schemas/SyncRecord' };
    expect(ok('get')).to.deep.equal(record);
    expect(ok('post')).to.deep.equal({
      type: 'object',
      properties: { success: { const: true }, data: record },
      required: ['success', 'data'],
      additionalProperties: false,
    });
    const apps = await startTestApi({ API_PROFILE: 'ssp-apps' });
    try {
      const sync = { chain: 'btc', walletIdentity: 'wapps', keyXpub: 'xpub', wkIdentity: 'wkapps' };
      const stored = await post(apps.url, '/v1/sync', sync);
      expect(stored.status).to.equal(200);
      expect(stored.body).to.have.keys('success', 'data');
      const read = await get(apps.url, '/v1/sync/wapps');
      expect(read.status).to.equal(200);
      expect(read.body).to.deep.equal(stored.body.data);
    } finally {
      await apps.stop();
    }
  });

  it('describes GET /v1/openapi.json and GET /v1/asyncapi.json as their documents, not enveloped, under both profiles', () => {
    for (const profile of API_PROFILES) {
      const doc = buildOpenApi(API_ROUTES, profile) as { paths: Record<string, Record<string, any>> }; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON
      const ok = (path: string) => doc.paths[path]!.get.responses['200'].content['application/json'].schema;
      expect(ok('/v1/openapi.json'), profile).to.deep.equal({ $ref: '#/components/schemas/OpenApiDocument' });
      expect(ok('/v1/asyncapi.json'), profile).to.deep.equal({
        $ref: '#/components/schemas/AsyncApiDocument',
      });
    }
  });

  it('describes every endpoint with its body, parameters, success and each error status', () => {
    const doc = buildOpenApi(API_ROUTES) as { paths: Record<string, Record<string, any>> }; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON
    const action = doc.paths['/v1/action']!.post;
    expect(action.requestBody.content['application/json'].schema).to.deep.equal({
      $ref: '#/components/schemas/ActionRequest',
    });
    expect(Object.keys(action.responses)).to.deep.equal([
      '200',
      '400',
      '401',
      '408',
      '409',
      '413',
      '415',
      '417',
      '429',
      '431',
      '500',
      '503',
    ]);
    expect(
      action.responses['400'].content['application/json'].schema.properties.error.properties.code.enum,
    ).to.have.members(['BAD_REQUEST', 'INVALID_JSON', 'INVALID_PARAMETER']);
    expect(
      action.responses['401'].content['application/json'].schema.properties.error.properties.code.enum,
    ).to.have.members(['AUTH_REQUIRED', 'AUTH_INVALID', 'AUTH_EXPIRED', 'AUTH_REPLAYED']);
    expect(action.responses['429'].headers).to.have.keys(
      'X-Request-Id',
      'X-Content-Type-Options',
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
      'Retry-After',
    );
    const poll = doc.paths['/v1/action/{id}']!.get;
    expect(poll.parameters.map((p: { name: string; in: string }) => `${p.in} ${p.name}`)).to.deep.equal([
      'path id',
      'query to',
      'query after',
      'query epoch',
      'query wait',
      'header If-None-Match',
    ]);
    // The stream read answers the ActionStream, without a tag.
    expect(poll.responses['200'].content['application/json'].schema.properties.data.anyOf).to.deep.equal([
      { $ref: '#/components/schemas/ActionRecord' },
      { $ref: '#/components/schemas/ActionStream' },
    ]);
    expect(Object.keys(poll.responses).slice(0, 3)).to.deep.equal(['200', '304', '400']);
    expect(poll.responses['304']).to.not.have.property('content');
    for (const status of ['200', '304']) {
      expect(poll.responses[status].headers).to.have.keys(
        'X-Request-Id',
        'X-Content-Type-Options',
        'ETag',
        'Cache-Control',
        'RateLimit-Limit',
        'RateLimit-Remaining',
        'RateLimit-Reset',
      );
    }
    expect(poll.responses['200'].headers.ETag).to.deep.equal({ $ref: '#/components/headers/ETag' });
    expect(poll.responses['304'].headers.ETag).to.deep.equal({ $ref: '#/components/headers/ETagRequired' });
    expect(poll.responses['404'].headers).to.not.have.property('ETag');
    const tokenInfo = doc.paths['/v1/tokeninfo/{network}/{address}']!.get;
    expect(tokenInfo.parameters.map((p: { name: string }) => p.name)).to.deep.equal(['network', 'address']);
    expect(tokenInfo.parameters[1].schema).to.deep.equal({ type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' });
    expect(Object.keys(doc.paths).sort()).to.deep.equal([...new Set(API_ROUTES.map((o) => o.path))].sort());
  });

  it('has a row for every route the relay mounts (the layers of the built router), with the same method', async () => {
    const config = loadConfig(testEnv());
    const redis = createRedis(config.redis.topology, 'store');
    const { keys, ack } = openKeys(config);
    const stores = openStores(config, { store: redis, actions: redis }, keys, ack);
    try {
      const app = buildApp({
        config,
        log: createLogger('error', {}, () => {}),
        redis: { store: redis, actions: redis, limiter: redis, queue: redis },
        keys,
        ack,
        stores,
        readiness: { draining: () => false, redisAnswers: async () => true },
        actionEvents: { stored: () => {}, receiptNotice: () => undefined, delivered: () => {} },
        longPolls: new LongPolls({ watch: () => ({ listening: Promise.resolve(), release: () => {} }) }, 0),
        presence: { pair: () => Promise.reject(new Error('not read')) },
        ...openSessions(config, stores, nodeCryptoVerifier),
      });
      const router = app.middleware
        .map((middleware) => (middleware as { router?: Router }).router)
        .find((found) => found !== undefined)!;
      // The router answers HEAD with the GET route.
      const mounted = router.stack.flatMap((layer) =>
        layer.methods
          .filter((method) => method !== 'HEAD')
          .map((method) => `${method.toLowerCase()} ${String(layer.path).replace(/:(\w+)/g, '{$1}')}`),
      );
      expect(mounted.sort()).to.deep.equal(API_ROUTES.map((o) => `${o.method} ${o.path}`).sort());
    } finally {
      redis.disconnect();
      await ack.close();
    }
  });

  it("the relay's own ajv keywords become words other tools read", () => {
    const text = JSON.stringify(buildOpenApi(API_ROUTES));
    expect(text).not.to.include('jsonObjectString');
    expect(text).not.to.include('queryValue');
    expect(text).to.include('must be a JSON object encoded as a string');
  });

  describe('the test client checks every request the relay accepted against it', () => {
    const checker = new ContractChecker();
    /** A 200 the relay could have answered to `request`, sent to `target`. */
    const accepted = (target: string, request: unknown, data: unknown) => ({
      ...exchange(
        target,
        200,
        { success: true, data },
        target.startsWith('/v1/action/') ? { etag: '"r"', 'cache-control': 'no-cache' } : {},
      ),
      method: target.startsWith('/v1/action/') ? 'GET' : 'POST',
      ...(request === undefined
        ? {}
        : { request: { type: 'application/json', text: JSON.stringify(request) } }),
    });
    const counts = { wkIdentity: 'pair', keyTokens: 1, walletTokens: 0 };

    it('a signed body with an unknown field passes; a body the document calls invalid fails', () => {
      const signedBody = signed({ wkIdentity: 'pair', keyToken: 't', extra: 1 }, { purpose: 'token' });
      expect(() => checker.check(accepted('/v1/token', signedBody, counts))).not.to.throw();
      expect(() =>
        checker.check(accepted('/v1/token', { wkIdentity: 'a/b', keyToken: 't' }, counts)),
      ).to.throw(
        /POST \/v1\/token → 200 disagrees with the OpenAPI document: the request body\/wkIdentity must match pattern/,
      );
    });

    it('a path parameter the document calls invalid fails', () => {
      expect(() => checker.check(accepted('/v1/action/a%20b', undefined, {}))).to.throw(
        /path parameter id must match pattern/,
      );
    });
  });

  describe('the test client checks every response against it', () => {
    const checker = new ContractChecker();

    it('a real answer passes; the same answer with a field of the wrong type fails', async () => {
      const res = await post(api.url, '/v1/token', { wkIdentity: 'pair', keyToken: 't' });
      expect(res.status).to.equal(200);
      expect(() => checker.check(exchange('/v1/token', 200, res.body))).not.to.throw();
      const wrong = { ...res.body, data: { ...res.body.data, keyTokens: '1' } };
      expect(() => checker.check(exchange('/v1/token', 200, wrong))).to.throw(
        /POST \/v1\/token → 200 disagrees with the OpenAPI document: body\/data\/keyTokens must be integer/,
      );
    });

    it('an undocumented status, field, header or error code fails', () => {
      expect(() => checker.check(exchange('/v1/token', 404, {}))).to.throw(/status 404 is not documented/);
      const record = { wkIdentity: 'p', keyTokens: 1, walletTokens: 0, token: 'leaked' };
      expect(() => checker.check(exchange('/v1/token', 200, { success: true, data: record }))).to.throw(
        /must NOT have additional properties/,
      );
      const counts = { success: true, data: { wkIdentity: 'p', keyTokens: 1, walletTokens: 0 } };
      expect(() => checker.check({ ...exchange('/v1/token', 200, counts), headers: {} })).to.throw(
        /header X-Request-Id is missing/,
      );
      const sniffable = exchange('/v1/token', 200, counts);
      delete (sniffable.headers as Record<string, string>)['x-content-type-options'];
      expect(() => checker.check(sniffable)).to.throw(/header X-Content-Type-Options is missing/);
      const notModified = { ...exchange('/v1/action/p', 304, ''), method: 'GET', text: '' };
      expect(() => checker.check(notModified)).to.throw(/header ETag is missing/);
      const tagged = {
        ...notModified,
        headers: { ...notModified.headers, etag: '"t"', 'cache-control': 'no-cache' },
      };
      expect(() => checker.check(tagged)).not.to.throw();
      expect(() => checker.check({ ...tagged, target: '/v1/sync/p' })).to.throw(
        /status 304 is not documented/,
      );
      const notFound = { success: false, error: { code: 'NOT_FOUND', message: 'x', requestId: 'r' } };
      expect(() => checker.check(exchange('/v1/token', 400, notFound))).to.throw(
        /must be equal to one of the allowed values/,
      );
      expect(() => checker.check(exchange('/v1/nope', 404, notFound))).not.to.throw();
      expect(() => checker.check(exchange('/v1/nope', 400, notFound))).to.throw(
        /NOT_FOUND answered with status 400/,
      );
    });
  });
});
