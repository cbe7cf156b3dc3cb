import { readFileSync } from 'node:fs';
import { Parser } from '@asyncapi/parser';
import { expect } from 'chai';
import { parse } from 'yaml';
import { ACTION_TYPES } from '../../src/action-types/table.js';
import type { ApiProfile } from '../../src/core/config/config.js';
import { buildAsyncApi } from '../../src/contract/asyncapi.js';
import { buildOpenApi } from '../../src/contract/document.js';
import { get, startTestApi } from '../helpers/api.js';
import { API_ROUTES } from '../../src/features.js';

const text = readFileSync(new URL('../../docs/asyncapi.yaml', import.meta.url), 'utf8');

/** The parser's errors and warnings; the only hint it leaves is that AsyncAPI 3.1 exists. */
async function problems(source: string): Promise<string[]> {
  const { diagnostics } = await new Parser().parse(source);
  // Severity 0 is an error, 1 a warning.
  return diagnostics.filter((d) => d.severity <= 1).map((d) => `${d.path.join('/')}: ${d.message}`);
}

describe('docs/asyncapi.yaml', () => {
  it('parses as AsyncAPI 3.0 without errors or warnings', async function () {
    this.timeout(30_000);
    expect(await problems(text)).to.deep.equal([]);
    const { document } = await new Parser().parse(text);
    expect(document?.version()).to.equal('3.0.0');
    expect(
      document
        ?.channels()
        .all()
        .map((c) => c.address()),
    ).to.deep.equal(['/v1/socket/key', '/v1/socket/wallet']);
  });

  it('is what `npm run asyncapi` generates (run it after changing a schema or the action-type table)', () => {
    expect(parse(text)).to.deep.equal(buildAsyncApi());
  });

  it('GET /v1/asyncapi.json serves it as JSON, not enveloped, and the parser accepts the served text', async function () {
    this.timeout(30_000);
    const api = await startTestApi({ API_PROFILE: 'ssp-apps' });
    try {
      const res = await get(api.url, '/v1/asyncapi.json');
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.equal('application/json; charset=utf-8');
      expect(res.headers.get('x-request-id')).to.be.a('string');
      expect(res.headers.get('ratelimit-limit')).to.equal('100000');
      expect(res.body).to.deep.equal(parse(text));
      expect(res.body).to.deep.equal(buildAsyncApi());
      expect(await problems(JSON.stringify(res.body))).to.deep.equal([]);
    } finally {
      await api.stop();
    }
  });

  it('its record schema is the OpenAPI ActionRecord with the optional expireAt of API_PROFILE=ssp-apps, and every routed action type is an event on its path', () => {
    const doc = parse(text);
    type RecordSchema = { properties: { [name: string]: object } };
    const recordOf = (profile: ApiProfile) =>
      (buildOpenApi(API_ROUTES, profile) as { components: { schemas: { ActionRecord: RecordSchema } } })
        .components.schemas.ActionRecord;
    const { expireAt, ...properties } = doc.components.schemas.ActionRecord.properties;
    expect({ ...doc.components.schemas.ActionRecord, properties }).to.deep.equal(recordOf('standard'));
    expect(expireAt).to.deep.equal({
      ...recordOf('ssp-apps').properties.expireAt,
      description: 'only under API_PROFILE=ssp-apps: the same as expiresAt',
    });
    for (const [action, rule] of Object.entries(ACTION_TYPES)) {
      const channel = rule.side === 'key' ? 'keyApp' : 'walletApp';
      expect(doc.channels[channel].messages[action], action).to.deep.equal({
        $ref: `#/components/messages/${action}`,
      });
      expect(doc.components.messages[action].payload).to.deep.equal({
        $ref: '#/components/schemas/ActionRecord',
      });
    }
    expect(doc.components.messages.join.payload).to.deep.equal({ $ref: '#/components/schemas/JoinEvent' });
    // A join carries the position it resumes from and the identity signature's four fields or a session token
    // beside wkIdentity, and is answered when asked.
    expect(Object.keys(doc.components.schemas.JoinEvent.properties)).to.deep.equal([
      'wkIdentity',
      'since',
      'signature',
      'message',
      'publicKey',
      'witnessScript',
      'token',
    ]);
    expect(doc.operations.joinKey.reply.messages).to.deep.equal([
      { $ref: '#/channels/keyApp/messages/joinAnswer' },
    ]);
  });
});
