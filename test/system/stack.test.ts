import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { expect } from 'chai';
import { portAnswers } from '../../src/core/redis/server.js';
import { get, post, testEnv } from '../helpers/api.js';
import { alive, descendants, exitOf, tempDirs } from '../helpers/child.js';
import { requireNginx } from '../helpers/nginx.js';
import { waitFor } from '../helpers/wait.js';

/** `name | text` lines of the stack's output, by name. */
function linesOf(stdout: string, name: string): string[] {
  const prefix = `${name.padEnd(6)} | `;
  return stdout
    .split('\n')
    .filter((line) => line.startsWith(prefix))
    .map((line) => line.slice(prefix.length));
}

/** The request ids each pod logged a request line for. */
function requestIdsOf(stdout: string, pod: string): Set<string> {
  return new Set(
    linesOf(stdout, pod)
      .map((line) => JSON.parse(line) as { msg: string; requestId?: string })
      .filter((line) => line.msg === 'request' && line.requestId)
      .map((line) => line.requestId!),
  );
}

describe('npm run stack: Redis, two API pods, the worker and nginx without Docker', function () {
  this.timeout(120_000); // four cold `node --import=tsx` starts on a busy machine
  before(requireNginx);

  it('prints its URL; requests through nginx reach both pods over one Redis; Ctrl-C stops every process, exit code 0', async () => {
    // A Ctrl-C in a terminal signals the whole process group: npm, the stack and its children.
    const npm = spawn('npm', ['run', 'stack'], {
      detached: true,
      env: { ...process.env, ...testEnv({ LOG_LEVEL: 'info' }) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    npm.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    npm.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    let below: number[] = [];
    try {
      const url = await waitFor(
        'the printed URL',
        () => {
          if (npm.exitCode !== null) throw new Error(`npm run stack exited: ${stderr}${stdout.slice(-2000)}`);
          return /^stack {2}\| multisig-relay at (http:\/\/127\.0\.0\.1:\d+) /m.exec(stdout)?.[1];
        },
        90_000,
      );
      const redisUrl = /^stack {2}\| redis {3}(redis:\/\/127\.0\.0\.1:\d+) /m.exec(stdout)![1]!;
      for (const role of ['api-1', 'api-2', 'worker']) {
        const using = linesOf(stdout, role)
          .map((line) => JSON.parse(line) as { msg: string; redis?: string })
          .find((line) => line.msg === 'using Redis');
        expect(using?.redis, role).to.equal(new URL(redisUrl).host);
      }

      // nginx picks a pod per request: each record is written through one and read through either.
      const servedBy = new Set<string>();
      for (let i = 0; i < 20 && servedBy.size < 2; i++) {
        const record = {
          chain: 'btc',
          walletIdentity: `stack-${i}`,
          keyXpub: 'xpub1',
          wkIdentity: `wk-${i}`,
        };
        const written = await post(url, '/v1/sync', record);
        expect(written.status).to.equal(200);
        const read = await get(url, `/v1/sync/stack-${i}`);
        expect(read.status).to.equal(200);
        expect(read.body.data).to.deep.equal(written.body.data);
        for (const reply of [written, read]) {
          const id = reply.headers.get('x-request-id')!;
          const pod = await waitFor('the pod’s request line', () =>
            ['api-1', 'api-2'].find((name) => requestIdsOf(stdout, name).has(id)),
          );
          servedBy.add(pod);
        }
      }
      expect([...servedBy].sort()).to.deep.equal(['api-1', 'api-2']);

      below = descendants(npm.pid!);
      const dirs = tempDirs(below);
      expect(dirs.map((dir) => /relay-(redis|nginx)-/.exec(dir)?.[1]).sort()).to.deep.equal([
        'nginx',
        'redis',
      ]);
      process.kill(-npm.pid!, 'SIGINT');
      expect(await exitOf(npm, 60_000)).to.equal(0);
      await waitFor(
        'every process the stack started to exit',
        () => below.every((pid) => !alive(pid)),
        15_000,
      );
      expect(await portAnswers('127.0.0.1', Number(new URL(url).port))).to.equal(false);
      expect(await portAnswers('127.0.0.1', Number(new URL(redisUrl).port))).to.equal(false);
      await waitFor('their directories to be removed', () => !dirs.some(existsSync));
      expect(linesOf(stdout, 'stack').slice(-1)).to.deep.equal(['stopped']);
      expect(stdout).not.to.include('did not close in time');
      expect(stderr).to.equal('');
    } finally {
      for (const pid of below.filter(alive)) process.kill(pid, 'SIGKILL');
      if (npm.exitCode === null) process.kill(-npm.pid!, 'SIGKILL');
    }
  });
});
