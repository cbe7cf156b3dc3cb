import { spawn, spawnSync } from 'node:child_process';
import { request } from 'node:http';
import { expect } from 'chai';
import { knownEnvVars, loadConfig } from '../../src/config.js';
import { freePort } from '../../src/core/redis/server.js';
import { testEnv, waitUntilReady } from '../helpers/api.js';
import { exitOf, spawnNode } from '../helpers/child.js';
import { waitFor } from '../helpers/wait.js';
import { redis, testRedis } from '../helpers/redis.js';

const MAIN = ['--import=tsx', 'src/main.ts'];

describe('process lifecycle', () => {
  it('SIGTERM: readiness stops saying ready, the in-flight request completes, exit code 0', async function () {
    this.timeout(30_000);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const child = spawn(process.execPath, MAIN, {
      env: { ...process.env, ...testEnv({ PORT: String(port), RELAY_ROLE: 'api', LOG_LEVEL: 'info' }) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout!.on('data', (chunk) => (stdout += chunk));
    try {
      await waitUntilReady(url, 15_000);
      const body = JSON.stringify({
        chain: 'btc',
        wkIdentity: 'slow',
        action: 'txid',
        payload: 'ab'.repeat(50_000),
      });
      const half = Math.floor(body.length / 2);
      let readyDuringDrain: number | string = 'not asked';
      const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = request(
          `${url}/v1/action`,
          { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': body.length } },
          (res) => {
            let text = '';
            res.on('data', (chunk) => (text += chunk));
            res.on('end', () => resolve({ status: res.statusCode!, text }));
          },
        );
        req.on('error', reject);
        req.write(body.slice(0, half));
        setTimeout(() => {
          child.kill('SIGTERM');
          setTimeout(() => {
            void fetch(`${url}/readyz`)
              .then(
                (r) => r.status,
                () => 'refused',
              )
              .then((answer) => {
                readyDuringDrain = answer;
                req.end(body.slice(half));
              });
          }, 300);
        }, 200);
      });
      const { status, text } = await response;
      expect(readyDuringDrain).to.be.oneOf([503, 'refused']);
      expect(status).to.equal(200);
      expect(JSON.parse(text).data.wkIdentity).to.equal('slow');
      expect(await redis().exists('relay:action:slow')).to.equal(1);
      expect(await exitOf(child)).to.equal(0);
      expect(stdout).to.contain('"msg":"shutting down"');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('SIGTERM with Redis gone: the API and both workers still stop within the grace period', async function () {
    this.timeout(40_000);
    const [port, metricsPort] = [await freePort(), await freePort()];
    const env = testEnv({
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      RELAY_ROLE: 'all',
      SHUTDOWN_TIMEOUT_MS: '1000',
    });
    const child = spawnNode(['src/main.ts'], env);
    try {
      // Announced once every role has started.
      await waitFor('the relay to start', () => child.stdout.includes('"msg":"metrics listening"'), 20_000);
      await waitUntilReady(`http://127.0.0.1:${port}`, 20_000);
      await testRedis().stop();
      const signalled = Date.now();
      child.process.kill('SIGTERM');
      expect(await child.exit()).to.equal(0);
      // SHUTDOWN_TIMEOUT_MS plus the release and close allowances, far below a pod's grace period
      expect(Date.now() - signalled).to.be.below(15_000);
    } finally {
      child.kill();
      await testRedis().start();
    }
  });

  it('a bad variable stops start-up with one line naming it (exit code 2)', () => {
    const run = spawnSync(process.execPath, MAIN, {
      env: { ...process.env, SYNC_TTL_SECONDS: 'soon', REDIS_URL: testRedis().url },
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(run.status).to.equal(2);
    expect(run.stderr.trim()).to.equal(
      'multisig-relay: invalid configuration: SYNC_TTL_SECONDS must be an integer from 1 to 86400 (got "soon")',
    );
  });

  describe('config loader', () => {
    it('applies the documented defaults (README.md#configuration)', () => {
      const config = loadConfig({});
      expect(config).to.deep.include({
        port: 9876,
        host: '0.0.0.0',
        redis: {
          topology: { kind: 'standalone', url: 'redis://127.0.0.1:6379', explicit: false },
          waitReplicas: 0,
          waitTimeoutMs: 500,
          livenessIntervalMs: 10_000,
        },
        keyPrefix: 'relay:',
        role: 'all',
        logLevel: 'info',
        corsOrigins: '*',
      });
      expect(config.market.services).to.deep.equal({ onramp: true, offramp: true, swap: true });
      expect(config.sync).to.deep.equal({ ttlSeconds: 900, readGraceSeconds: 120 });
      expect(config.action).to.deep.equal({ ttlSeconds: 900 });
      expect(config.rateLimit).to.deep.equal({ points: 120, windowSeconds: 30, trustProxyHops: 0 });
    });

    for (const [name, value, message] of [
      ['RELAY_ROLE', 'both', 'RELAY_ROLE must be one of api, worker, all (got "both")'],
      ['REDIS_URL', 'http://x', 'REDIS_URL must be a redis: or rediss: URL'],
      ['PORT', '70000', 'PORT must be an integer from 0 to 65535 (got "70000")'],
      ['SERVICES', '[1]', 'SERVICES must be a JSON object'],
      ['SERVICES', '{', 'SERVICES must be a JSON object (it is not valid JSON)'],
      ['RATE_LIMIT_POINTS', '-1', 'RATE_LIMIT_POINTS must be an integer from 1 to 1000000 (got "-1")'],
    ]) {
      it(`rejects ${name}=${value}`, () => {
        expect(() => loadConfig({ [name!]: value })).to.throw(message!);
      });
    }

    it('lets the environment win over CONFIG_FILE', async () => {
      const { writeFileSync, mkdtempSync } = await import('node:fs');
      const { join } = await import('node:path');
      const { tmpdir } = await import('node:os');
      const file = join(mkdtempSync(join(tmpdir(), 'relay-config-')), 'config.json');
      writeFileSync(file, JSON.stringify({ PORT: 1234, KEY_PREFIX: 'file:', SERVICES: { swap: false } }));
      const config = loadConfig({ CONFIG_FILE: file, PORT: '4321' });
      expect(config.port).to.equal(4321);
      expect(config.keyPrefix).to.equal('file:');
      expect(config.market.services).to.deep.equal({ swap: false });
    });

    it('knows every documented variable', () => {
      const known = knownEnvVars();
      for (const name of [
        'PORT',
        'HOST',
        'REDIS_URL',
        'KEY_PREFIX',
        'RELAY_ROLE',
        'SYNC_TTL_SECONDS',
        'SYNC_READ_GRACE_SECONDS',
        'ACTION_TTL_SECONDS',
        'RATE_LIMIT_POINTS',
        'RATE_LIMIT_WINDOW_SECONDS',
        'TRUST_PROXY_HOPS',
        'SUBMISSIONS_PER_DAY',
        'SIGN_PER_MINUTE',
        'CORS_ORIGINS',
        'HELPDESK_PROVIDER',
        'FRESHDESK_URL',
        'FRESHDESK_API_KEY',
        'ZENDESK_URL',
        'ZENDESK_EMAIL',
        'ZENDESK_API_TOKEN',
        'HELPDESK_WEBHOOK_URL',
        'HELPDESK_WEBHOOK_SECRET',
        'RATES_CRYPTO_URL',
        'RATES_FIAT_URL',
        'RATES_REFRESH_SECONDS',
        'FEES_REFRESH_SECONDS',
        'FEES_BTC_URL',
        'FEES_LTC_URL',
        'EVM_RPC_ETH',
        'EVM_RPC_SEPOLIA',
        'EVM_RPC_POLYGON',
        'EVM_RPC_AMOY',
        'EVM_RPC_BASE',
        'EVM_RPC_BSC',
        'EVM_RPC_AVAX',
        'ONRAMPER_SECRET',
        'SERVICES',
        'LOG_LEVEL',
        'PUSH_PROVIDER',
        'FCM_SERVICE_ACCOUNT_FILE',
        'FCM_API_URL',
        'AUTH_MODE',
        'AUTH_ROUTES',
        'AUTH_WINDOW_SECONDS',
        'AUTH_PIN_DAYS',
        'AUTH_PIN_JOINS',
        'AUTH_UNSIGNED_ACTIONS',
        'SOCKET_ROOMS_MAX',
        'PUSH_PER_PAIR_PER_MINUTE',
        'TOKEN_REGISTRATIONS_PER_HOUR',
        'SOCKET_HANDSHAKES_PER_MINUTE',
        'SOCKET_CONNECT_TIMEOUT_MS',
        'HTTP_ANSWERS_PER_IP',
      ]) {
        expect(known, name).to.include(name);
      }
    });
  });
});
