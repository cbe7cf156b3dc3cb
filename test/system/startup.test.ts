import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:net';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/core/config/config.js';
import { freePort, portAnswers, startPrivateRedis } from '../../src/core/redis/server.js';
import { post, startTestApi, testEnv, waitUntilReady } from '../helpers/api.js';
import { alive, descendants, exitOf, runNode, spawnNode, tempDirs, type Child } from '../helpers/child.js';
import { redis, testRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';

const MAIN = ['src/main.ts'];

/** Every stdout line parsed; fails the test on a line that is not one JSON object with a level and a message. */
function jsonLines(child: Child): Record<string, unknown>[] {
  return child.lines().map((line) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      throw new Error(`not a JSON line: ${line}`);
    }
    expect(parsed).to.be.an('object').that.includes.all.keys('time', 'level', 'msg');
    return parsed as Record<string, unknown>;
  });
}

function count(lines: Record<string, unknown>[], msg: string): number {
  return lines.filter((line) => line.msg === msg).length;
}

const answers = (url: string) =>
  fetch(url).then(
    (res) => res.status === 200,
    () => false,
  );

/** The sum of a Prometheus counter's samples on the child's metrics listener. */
async function counter(metricsPort: number, name: string, labels = ''): Promise<number> {
  const text = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((res) => res.text());
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) && line.includes(labels))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

describe('the relay as a process: start-up, shutdown and its logs', function () {
  this.timeout(60_000); // a cold `node --import=tsx` start takes seconds on a busy machine

  for (const role of ['worker', 'all']) {
    it(`RELAY_ROLE=${role} with Redis unreachable at start-up: /healthz answers and SIGTERM exits 0 in the grace period`, async () => {
      const [port, metricsPort, closed] = [await freePort(), await freePort(), await freePort()];
      const child = spawnNode(
        MAIN,
        testEnv({
          REDIS_URL: `redis://127.0.0.1:${closed}`,
          RELAY_ROLE: role,
          PORT: String(port),
          METRICS_PORT: String(metricsPort),
          SHUTDOWN_TIMEOUT_MS: '1000',
          LOG_LEVEL: 'info',
        }),
      );
      try {
        await waitFor('/healthz', () => answers(`http://127.0.0.1:${metricsPort}/healthz`), 30_000);
        await waitFor(
          'Redis errors',
          async () => (await counter(metricsPort, 'relay_redis_client_errors_total')) >= 6,
        );
        child.process.kill('SIGTERM');
        // SHUTDOWN_TIMEOUT_MS plus the slack: a hang shows as 'still running'.
        expect(await child.exit(7000)).to.equal(0);
        expect(child.stderr).to.equal('');
        const lines = jsonLines(child);
        expect(count(lines, 'Redis unreachable')).to.equal(1);
        expect(count(lines, 'Redis still unreachable')).to.equal(0);
        expect(lines.find((line) => line.msg === 'Redis unreachable')).to.include({
          redis: `127.0.0.1:${closed}`,
        });
        expect(count(lines, 'shutting down')).to.equal(1);
      } finally {
        child.kill();
      }
    });
  }

  it('logs stay JSON and quiet: Redis named without its password, its policy and maxmemory warned about once, an outage and failing providers logged once', async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    await redis().config('SET', 'maxmemory-policy', 'allkeys-lru');
    const url = new URL(testRedis().url);
    url.password = 's3cret-pw';
    const child = spawnNode(
      MAIN,
      testEnv({
        REDIS_URL: url.toString(),
        RELAY_ROLE: 'all',
        PORT: String(port),
        METRICS_PORT: String(metricsPort),
        FEES_REFRESH_SECONDS: '1',
        LOG_LEVEL: 'info',
      }),
    );
    try {
      const refreshes = () => counter(metricsPort, 'relay_jobs_total', 'queue="refresh"');
      await waitFor('three refreshes', async () => (await refreshes().catch(() => 0)) >= 3, 30_000);
      await testRedis().stop();
      await waitFor('the outage to be seen', async () => {
        return (await counter(metricsPort, 'relay_redis_client_errors_total')) >= 20;
      });
      await testRedis().start();
      const refreshed = await waitFor('a refresh after the outage', async () => {
        const [lines, done] = [jsonLines(child), await refreshes()];
        return count(lines, 'Redis reachable again') === 1 && done >= 5 && lines;
      });
      expect(refreshed).to.have.length.above(0);
      child.process.kill('SIGTERM');
      expect(await child.exit(15_000)).to.equal(0);

      expect(child.stderr).to.equal('');
      expect(child.stdout).not.to.include('s3cret-pw');
      const lines = jsonLines(child);
      const redisAt = `127.0.0.1:${testRedis().port}`;
      expect(lines.filter((line) => line.msg === 'using Redis')).to.deep.equal([
        { ...lines.find((line) => line.msg === 'using Redis'), redis: redisAt },
      ]);
      expect(count(lines, 'signature verification')).to.equal(1);
      expect(lines.find((line) => line.msg === 'Redis settings')).to.include({
        redis: redisAt,
        maxmemoryPolicy: 'allkeys-lru',
        maxmemoryBytes: 0,
      });
      const histogram: Record<string, number> = {};
      for (const line of lines) histogram[String(line.msg)] = (histogram[String(line.msg)] ?? 0) + 1;
      expect(histogram).to.deep.include({
        'using Redis': 1,
        'Redis settings': 1,
        'Redis maxmemory-policy is not noeviction: it may evict records and queued jobs': 1,
        'Redis has no maxmemory: it can grow until the machine runs out of memory': 1,
        'Redis unreachable': 1,
        'Redis reachable again': 1,
        // 2 rates providers, btc, ltc and 7 EVM chains, each failing at every refresh: one line each
        'market provider failed; no value yet': 11,
      });
      expect(histogram).not.to.have.any.keys(
        'Redis still unreachable',
        'market provider still failing',
        'market provider failed; keeping the last good value',
        'support worker error',
        'market refresh worker error',
      );
      // BullMQ's own plain-text eviction warning (one per connection) arrives as one JSON line.
      const library = lines.filter((line) => line.msg === 'library output');
      expect(
        library.filter((line) => String(line.text).startsWith('IMPORTANT! Eviction policy')),
      ).to.have.length(1);
    } finally {
      child.kill();
      await testRedis().start();
      await redis().config('SET', 'maxmemory-policy', 'noeviction');
    }
  });

  describe('a busy port fails start-up before anything is announced, with one line naming the variable', () => {
    let taken: Server;
    let busy: number;
    before(async () => {
      taken = createServer();
      await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
      busy = (taken.address() as { port: number }).port;
    });
    after(() => new Promise<void>((resolve) => taken.close(() => resolve())));

    for (const variable of ['METRICS_PORT', 'PORT']) {
      it(variable, async () => {
        const other = variable === 'PORT' ? 'METRICS_PORT' : 'PORT';
        const run = await runNode(
          MAIN,
          testEnv({ [variable]: String(busy), [other]: String(await freePort()), RELAY_ROLE: 'all' }),
        );
        expect(run.code).to.equal(1);
        expect(run.stdout).to.equal('');
        expect(run.stderr).to.equal(
          `multisig-relay: ${variable}=${busy}: 127.0.0.1:${busy} is already in use\n`,
        );
      });
    }
  });

  it('npm start: SIGTERM to npm stops the relay too, and nothing is left holding the port', async () => {
    const port = await freePort();
    const npm = spawn('npm', ['start'], {
      env: { ...process.env, ...testEnv({ PORT: String(port), RELAY_ROLE: 'api' }) },
      stdio: 'ignore',
    });
    let below: number[] = [];
    try {
      await waitUntilReady(`http://127.0.0.1:${port}`, 30_000);
      below = descendants(npm.pid!);
      expect(below).to.not.deep.equal([]);
      npm.kill('SIGTERM');
      expect(await exitOf(npm)).to.not.equal('still running');
      await waitFor('every process npm started to exit', () => below.every((pid) => !alive(pid)), 15_000);
      expect(await portAnswers('127.0.0.1', port)).to.equal(false);
    } finally {
      for (const pid of below.filter(alive)) process.kill(pid, 'SIGKILL');
      npm.kill('SIGKILL');
    }
  });

  it('a private redis-server does not outlive its process, even one killed with SIGKILL; its directory goes too', async () => {
    const script = `
      import { startPrivateRedis } from './src/core/redis/server.ts';
      const redis = await startPrivateRedis();
      process.stdout.write(JSON.stringify({ port: redis.port, dir: redis.dir }) + '\\n');
      setInterval(() => {}, 1000);
    `;
    const child = spawnNode(['--input-type=module', '-e', script], {});
    try {
      const { port, dir } = await waitFor('the redis-server', () => {
        const [line] = child.lines();
        return line ? (JSON.parse(line) as { port: number; dir: string }) : undefined;
      });
      expect(await portAnswers('127.0.0.1', port)).to.equal(true);
      expect(existsSync(dir)).to.equal(true);
      child.process.kill('SIGKILL');
      await waitFor('redis-server to stop', async () => !(await portAnswers('127.0.0.1', port)));
      await waitFor('its directory to be removed', () => !existsSync(dir));
    } finally {
      child.kill();
    }
  });

  describe('npm start without REDIS_URL', () => {
    it('uses a private redis-server, never the machine’s 6379; the start log names the auth modes and the API profile; SIGTERM to the whole process group stops it without waiting on Redis, the server last', async function () {
      this.timeout(120_000);
      const [port, metricsPort] = [await freePort(), await freePort()];
      const env: Record<string, string | undefined> = {
        ...process.env,
        ...testEnv({
          PORT: String(port),
          METRICS_PORT: String(metricsPort),
          RELAY_ROLE: 'all',
          LOG_LEVEL: 'info',
          API_PROFILE: 'ssp-apps',
          AUTH_MODE: 'required',
          AUTH_ROUTES: 'sync=off,join=optional',
        }),
      };
      delete env.REDIS_URL;
      // As `timeout 8 npm start` or a terminal's Ctrl-C do: the signal reaches npm and every process of its group.
      const npm = spawn('npm', ['start'], { detached: true, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      npm.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      npm.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const logLines = () =>
        stdout
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as Record<string, unknown>);
      let below: number[] = [];
      try {
        await waitUntilReady(`http://127.0.0.1:${port}`, 60_000, () => npm.exitCode !== null).catch((err) => {
          throw new Error(`${(err as Error).message}: ${stderr}${stdout.slice(-2000)}`, { cause: err });
        });
        const started = logLines().find((line) => String(line.msg).startsWith('REDIS_URL is unset'));
        expect(started).to.include({
          level: 'warn',
          msg: 'REDIS_URL is unset: started a private redis-server for this process; its data is lost on exit',
        });
        const privateRedis = new URL(String(started!.redisUrl));
        expect(privateRedis.hostname).to.equal('127.0.0.1');
        expect(privateRedis.port).to.not.equal('6379');
        const usedRedis = await waitFor('the Redis settings', () =>
          logLines()
            .filter((line) => line.msg === 'using Redis' || line.msg === 'Redis settings')
            .map((line) => line.redis),
        );
        expect(new Set(usedRedis)).to.deep.equal(new Set([privateRedis.host]));
        expect(logLines().find((line) => line.msg === 'api listening')).to.deep.include({
          apiProfile: 'ssp-apps',
          auth: { action: 'required', token: 'required', sync: 'off', join: 'optional', ack: 'required' },
        });

        below = descendants(npm.pid!);
        const [dir] = tempDirs(below);
        expect(dir).to.match(/relay-redis-/);
        process.kill(-npm.pid!, 'SIGTERM');
        expect(await exitOf(npm, 30_000)).to.equal(0);
        expect(stdout).to.not.include('did not close in time');
        expect(
          ['shutting down', 'api stopped', 'worker stopped'].map((msg) => count(logLines(), msg)),
        ).to.deep.equal([1, 1, 1]);
        await waitFor('every process npm started to exit', () => below.every((pid) => !alive(pid)), 15_000);
        expect(await portAnswers('127.0.0.1', Number(privateRedis.port))).to.equal(false);
        expect(existsSync(dir!)).to.equal(false);
        expect(stderr).to.equal('');
      } finally {
        for (const pid of below.filter(alive)) process.kill(pid, 'SIGKILL');
        if (npm.exitCode === null) process.kill(-npm.pid!, 'SIGKILL');
      }
    });

    it('without redis-server installed, exits with one line saying how to get Redis or set REDIS_URL', async () => {
      // An empty PATH: node is run by its path, and no redis-server is found.
      const empty = mkdtempSync(join(tmpdir(), 'relay-path-'));
      const env: Record<string, string> = { ...testEnv(), PATH: empty };
      delete env.REDIS_URL;
      const run = await runNode(MAIN, env);
      expect(run).to.deep.equal({
        code: 1,
        stdout: '',
        stderr:
          'multisig-relay: REDIS_URL is unset and redis-server is not installed: install it (apt-get install ' +
          'redis-server, brew install redis) or set REDIS_URL to a Redis 7 server (e.g. REDIS_URL=redis://127.0.0.1:6379).\n',
      });
      rmSync(empty, { recursive: true });
    });
  });

  describe('configuration that would be accepted and then ignored', () => {
    for (const [env, line] of [
      [{ KEY_PREFIX: 'relay{x}:' }, 'KEY_PREFIX may not contain { or } (got "relay{x}:")'],
      [
        { AUTH_UNSIGNED_ACTIONS: 'recoveryrequets' },
        'AUTH_UNSIGNED_ACTIONS names "recoveryrequets", which is not an action type (built in or in ACTION_TYPES_EXTRA); separate types by commas, or say none',
      ],
      [
        { ACTION_TYPES_EXTRA: '[{"type":"presence","to":"key","replay":true,"push":null}]' },
        'ACTION_TYPES_EXTRA may not name a type "presence": ack, delivered, presence, join, leave are the sockets\' own events',
      ],
      [
        { REDIS_URL: 'redis://:pw@127.0.0.1:6390', REDIS_PASSWORD: 'other' },
        'REDIS_PASSWORD is set and REDIS_URL names one too: keep one of them',
      ],
    ] as const) {
      it(`${JSON.stringify(env)} stops start-up with one line naming the variable`, async () => {
        expect(await runNode(MAIN, testEnv(env))).to.deep.equal({
          code: 2,
          stdout: '',
          stderr: `multisig-relay: invalid configuration: ${line}\n`,
        });
      });
    }

    it('an operator action type may be sent unsigned', () => {
      const extra = JSON.stringify([{ type: 'vaultping', to: 'key', replay: true, push: null }]);
      const config = loadConfig(
        testEnv({ ACTION_TYPES_EXTRA: extra, AUTH_UNSIGNED_ACTIONS: 'recoveryrequest, vaultping' }),
      );
      expect(config.auth.unsignedActions).to.deep.equal(['recoveryrequest', 'vaultping']);
    });

    it('helpdesk and FCM credentials are required where jobs are delivered, not on API pods', () => {
      const env = testEnv({ HELPDESK_PROVIDER: 'zendesk', PUSH_PROVIDER: 'fcm' });
      expect(loadConfig({ ...env, RELAY_ROLE: 'api' })).to.deep.include({ role: 'api' });
      for (const role of ['worker', 'all']) {
        expect(() => loadConfig({ ...env, RELAY_ROLE: role })).to.throw(ConfigError, 'is required when');
      }
    });

    it('REDIS_USERNAME and REDIS_PASSWORD beside REDIS_URL are applied to it', async () => {
      const guarded = await startPrivateRedis({ args: ['--requirepass', 'secret-pw'] });
      const user = await startPrivateRedis();
      const admin = new Redis(user.url);
      await admin.call('ACL', 'SETUSER', 'relay', 'on', '>relay-pw', '~*', '&*', '+@all');
      try {
        for (const env of [
          { REDIS_URL: guarded.url, REDIS_PASSWORD: 'secret-pw' },
          { REDIS_URL: user.url, REDIS_USERNAME: 'relay', REDIS_PASSWORD: 'relay-pw' },
        ] as Record<string, string>[]) {
          const api = await startTestApi(env);
          try {
            expect(
              (
                await post(api.url, '/v1/sync', {
                  chain: 'btc',
                  walletIdentity: 'applied',
                  keyXpub: 'xpub1',
                  wkIdentity: 'k',
                })
              ).status,
            ).to.equal(200);
          } finally {
            await api.stop();
          }
        }
        expect(await admin.exists('relay:sync:applied')).to.equal(1);
      } finally {
        admin.disconnect();
        await Promise.all([guarded.stop(), user.stop()]);
      }
    });
  });

  describe('npm run jobs', () => {
    it('names the Redis it could not reach (never its password)', async () => {
      const closed = await freePort();
      const run = await runNode(['scripts/jobs.ts', 'failed'], {
        ...testEnv(),
        REDIS_URL: `redis://:pw-secret@127.0.0.1:${closed}`,
      });
      expect(run).to.deep.equal({
        code: 1,
        stdout: '',
        stderr: `jobs: cannot reach Redis at 127.0.0.1:${closed} (REDIS_URL): connect ECONNREFUSED 127.0.0.1:${closed}\n`,
      });
    });

    for (const args of [
      ['retry'],
      [],
      ['retry-everything'],
      ['failed', 'extra'],
      ['--queue', 'nope', 'failed'],
      ['--queue'],
    ]) {
      it(`${JSON.stringify(args)} prints the usage`, async () => {
        expect(await runNode(['scripts/jobs.ts', ...args], testEnv())).to.deep.equal({
          code: 1,
          stdout: '',
          stderr:
            'usage: npm run jobs -- [--queue support|push|refresh] failed | retry <job id> | retry-all\n',
        });
      });
    }
  });
});
