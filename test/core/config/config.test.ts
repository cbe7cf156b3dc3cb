import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { VARIABLES, knownEnvVars, readConfig } from '../../../src/config.js';
import { ConfigError, readValues as readTable, type Source } from '../../../src/core/config/config.js';
import { configRows, configTable, withConfigTable } from '../../../src/core/config/docs.js';
import { int, jsonObject, nodes, numberMap, oneOf, url } from '../../../src/core/config/parsers.js';
import type { Variable } from '../../../src/core/config/variables.js';

const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
const entries = Object.entries(VARIABLES) as [string, Variable<unknown>][];
/** The text a variable's default is written as in a `NAME=value` line. */
const asValue = (value: unknown) => (typeof value === 'object' ? JSON.stringify(value) : String(value));
/** The composed variables' values read from `source`. */
const readValues = (source: Source) => readTable(source, VARIABLES);
const defaults = readValues({}).values;

describe('core/config', () => {
  describe('parsers', () => {
    it('int takes digits within bounds; a bound may name an earlier variable', () => {
      expect(int(1, 10)('7', 'N', {})).to.equal(7);
      for (const bad of ['0', '11', '-1', '1.5', 'x']) {
        expect(() => int(1, 10)(bad, 'N', {})).to.throw(
          ConfigError,
          `N must be an integer from 1 to 10 (got "${bad}")`,
        );
      }
      expect(() => int('LOW', 10)('4', 'N', { LOW: 5 })).to.throw(
        'N must be an integer from 5 to 10 (got "4")',
      );
    });

    it('oneOf, url and nodes name the variable in their refusals', () => {
      expect(() => oneOf(['a', 'b'])('c', 'N', {})).to.throw('N must be one of a, b (got "c")');
      expect(url()('https://x.test//', 'N', {})).to.equal('https://x.test');
      expect(() => url()('nope', 'N', {})).to.throw('N must be a URL (got an unparseable value)');
      expect(() => url(['redis:'])('http://x', 'N', {})).to.throw('N must be a redis: URL');
      expect(nodes('a:1, [::1]:2', 'N', {})).to.deep.equal([
        { host: 'a', port: 1 },
        { host: '::1', port: 2 },
      ]);
      expect(() => nodes('a:0', 'N', {})).to.throw(
        'N must be a list of host:port separated by commas (got "a:0")',
      );
    });

    it('one JSON-object reader, under the number maps too', () => {
      expect(jsonObject('{"a":1}', 'N', {})).to.deep.equal({ a: 1 });
      expect(() => jsonObject('[1]', 'N', {})).to.throw('N must be a JSON object');
      expect(() => jsonObject('{', 'N', {})).to.throw('N must be a JSON object (it is not valid JSON)');
      const fees = numberMap({ a: 1, b: 2 }, ['a', 'b']);
      expect(fees('{"b":3}', 'N', {})).to.deep.equal({ a: 1, b: 3 });
      expect(() => fees('[]', 'N', {})).to.throw('N must be a JSON object');
      expect(() => fees('{"c":1}', 'N', {})).to.throw('N has an unknown chain "c"');
      expect(() => fees('{"a":-1}', 'N', {})).to.throw('N.a must be a non-negative number');
    });
  });

  describe('entries', () => {
    it('an unset or blank variable takes its fallback', () => {
      const { values } = readValues({ PORT: '  ', HOST: ' ::1 ' });
      expect(values.PORT).to.equal(9876);
      expect(values.HOST).to.equal('::1');
      for (const [name, variable] of entries) {
        expect(defaults[name as keyof typeof defaults], name).to.deep.equal(variable.fallback);
      }
    });

    it('every fallback is a value its own parser accepts', () => {
      for (const [name, variable] of entries) {
        if (variable.fallback === undefined) continue;
        expect(variable.parse(asValue(variable.fallback), name, defaults), name).to.deep.equal(
          variable.fallback,
        );
      }
    });

    it('the known variables are the entries, CONFIG_FILE among them', () => {
      expect(knownEnvVars()).to.deep.equal(Object.keys(VARIABLES).sort()).and.include('CONFIG_FILE');
    });

    it('at most one Redis topology', () => {
      expect(() => readValues({ REDIS_URL: 'redis://a:1', REDIS_CLUSTER_NODES: 'b:2' })).to.throw(
        'REDIS_URL and REDIS_CLUSTER_NODES are set: configure exactly one Redis topology',
      );
    });

    it('requirements hold only on the roles that read the variable', () => {
      expect(() => readValues({ REDIS_SENTINELS: 'a:1' })).to.throw(
        'REDIS_SENTINEL_NAME is required with REDIS_SENTINELS',
      );
      for (const [provider, first] of [
        ['freshdesk', 'FRESHDESK_URL'],
        ['zendesk', 'ZENDESK_URL'],
        ['webhook', 'HELPDESK_WEBHOOK_URL'],
      ]) {
        expect(() => readValues({ HELPDESK_PROVIDER: provider! })).to.throw(
          `${first} is required when HELPDESK_PROVIDER=${provider}`,
        );
        expect(() => readValues({ HELPDESK_PROVIDER: provider!, RELAY_ROLE: 'worker' })).to.throw(
          ConfigError,
        );
        expect(
          readValues({ HELPDESK_PROVIDER: provider!, RELAY_ROLE: 'api' }).values.HELPDESK_PROVIDER,
        ).to.equal(provider);
      }
      expect(() => readValues({ PUSH_PROVIDER: 'fcm' })).to.throw(
        'FCM_SERVICE_ACCOUNT_FILE is required when PUSH_PROVIDER=fcm',
      );
      expect(readValues({ PUSH_PROVIDER: 'fcm', RELAY_ROLE: 'api' }).values.PUSH_PROVIDER).to.equal('fcm');
    });
  });

  describe('the typed config', () => {
    it('is shaped from the values', () => {
      const { config } = readConfig({
        CORS_ORIGINS: 'https://a.test, https://b.test',
        AUTH_ROUTES: 'token=required, join=off',
        AUTH_UNSIGNED_ACTIONS: 'none',
        MARKET_REFRESH: 'off',
        EVM_RPC_BASE: 'https://base.test/',
        REDIS_URL: 'rediss://r.test:6380',
        REDIS_PASSWORD: 'pw',
      });
      expect(config.corsOrigins).to.deep.equal(['https://a.test', 'https://b.test']);
      expect(config.auth.modes).to.deep.equal({
        action: 'optional',
        token: 'required',
        sync: 'optional',
        join: 'off',
        ack: 'required',
      });
      expect(config.auth.unsignedActions).to.deep.equal([]);
      expect(config.market.refresh).to.equal(false);
      expect(config.market.evmRpc.base).to.equal('https://base.test');
      expect(config.redis.topology).to.deep.equal({
        kind: 'standalone',
        url: 'rediss://r.test:6380',
        explicit: true,
        password: 'pw',
      });
    });

    it('refuses what the shape cannot hold', () => {
      for (const [env, message] of [
        [{ KEY_PREFIX: 'a{b' }, 'KEY_PREFIX may not contain { or } (got "a{b")'],
        [{ AUTH_ROUTES: 'sync=required' }, 'make POST /v1/sync required'],
        [{ AUTH_ROUTES: 'push=off' }, 'AUTH_ROUTES must be route=mode pairs'],
        [
          { REDIS_URL: 'redis://u@r.test:1', REDIS_USERNAME: 'v' },
          'REDIS_USERNAME is set and REDIS_URL names one too',
        ],
        [
          {
            SOCKET_BACKLOG_BYTES: String(8 * 1024 * 1024),
            SOCKET_BACKLOG_POD_BYTES: String(4 * 1024 * 1024),
          },
          'SOCKET_BACKLOG_POD_BYTES must be an integer from 8388608',
        ],
      ] as const) {
        expect(() => readConfig(env), JSON.stringify(env)).to.throw(ConfigError, message);
      }
    });
  });

  describe('the recovery xpub records', () => {
    it('RECOVERYPUB_TTL_DAYS (730) and RECOVERYPUB_CREATIONS_PER_ADDRESS_PER_DAY (20) shape the config', () => {
      expect(readConfig({}).config.recoveryPub).to.deep.equal({
        ttlSeconds: 730 * 86_400,
        creationsPerAddressPerDay: 20,
      });
      const { config } = readConfig({
        RECOVERYPUB_TTL_DAYS: '1',
        RECOVERYPUB_CREATIONS_PER_ADDRESS_PER_DAY: '1000000',
      });
      expect(config.recoveryPub).to.deep.equal({ ttlSeconds: 86_400, creationsPerAddressPerDay: 1_000_000 });
    });

    it('a bad value of either stops start-up, naming it', () => {
      for (const [name, value, range] of [
        ['RECOVERYPUB_TTL_DAYS', '0', '1 to 3650'],
        ['RECOVERYPUB_TTL_DAYS', '3651', '1 to 3650'],
        ['RECOVERYPUB_TTL_DAYS', '1.5', '1 to 3650'],
        ['RECOVERYPUB_TTL_DAYS', 'forever', '1 to 3650'],
        ['RECOVERYPUB_CREATIONS_PER_ADDRESS_PER_DAY', '0', '1 to 1000000'],
        ['RECOVERYPUB_CREATIONS_PER_ADDRESS_PER_DAY', '-1', '1 to 1000000'],
        ['RECOVERYPUB_CREATIONS_PER_ADDRESS_PER_DAY', '1000001', '1 to 1000000'],
      ] as const) {
        expect(() => readConfig({ [name]: value })).to.throw(
          ConfigError,
          `${name} must be an integer from ${range} (got "${value}")`,
        );
      }
    });
  });

  describe('the documents derived from the entries', () => {
    it("the README's table is the one the entries render (npm run docs:config)", () => {
      const readme = read('README.md');
      expect(withConfigTable(readme, configTable(VARIABLES))).to.equal(readme);
    });

    it('each row of the table has its meaning, and each variable is in one row', () => {
      const rows = configRows(VARIABLES);
      expect(rows.every((row) => row.doc.length > 0)).to.equal(true);
      expect(rows.flatMap((row) => row.names)).to.deep.equal(Object.keys(VARIABLES));
    });

    it('.env.example shows each default as the entry has it, or an example the entry accepts', () => {
      for (const [, name, value] of read('.env.example').matchAll(/^# ([A-Z][A-Z0-9_]+)=(.+)$/gm)) {
        const variable = (VARIABLES as Record<string, Variable<unknown>>)[name!]!;
        if (variable.fallback === undefined) {
          expect(() => variable.parse(value!, name!, defaults), name).not.to.throw();
        } else {
          expect(value, name).to.equal(asValue(variable.fallback));
        }
      }
    });
  });
});
