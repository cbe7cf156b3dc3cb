import { Queue } from 'bullmq';
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { TOKEN_TTL_SECONDS, TokenStore } from '../../src/push/tokens/store.js';
import { WriteAck } from '../../src/core/redis/write-ack.js';
import { post, startTestApi } from '../helpers/api.js';
import { redis, testRedis } from '../helpers/redis.js';
import { keys, startTopology, type TestTopology, type TopologyName } from '../helpers/topologies.js';

const OWNER = (side: string, token: string) => keys.tokenOwner(side as 'key', token);

/** Runs `npm run migrate-keys` as operators do, against the topology in `env`. */
function migrate(env: Record<string, string>, args: string[] = []) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/migrate-keys.ts', ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** What a deployment of the previous version left in its (single) Redis. */
async function seedOldLayout(): Promise<void> {
  const old = redis();
  const now = Date.now();
  await old.zadd('relay:tokens:key:pairA', now - 1000, 'kt1', now, 'kt2');
  await old.pexpire('relay:tokens:key:pairA', TOKEN_TTL_SECONDS * 1000);
  await old.zadd('relay:tokens:wallet:pairA', now, 'wt1');
  for (const [side, token] of [
    ['key', 'kt1'],
    ['key', 'kt2'],
    ['wallet', 'wt1'],
  ]) {
    await old.set(OWNER(side!, token!), 'pairA', 'EX', TOKEN_TTL_SECONDS);
  }
  const connection = new Redis(testRedis().url, { maxRetriesPerRequest: null });
  const queue = new Queue('support', { connection, prefix: 'bull' });
  await queue.add('contact', { kind: 'contact', name: 'Ann' }, { jobId: 'contact-1', attempts: 12 });
  await queue.add('ticket', { kind: 'ticket', subject: 'x' }, { jobId: 'ticket-1', delay: 3_600_000 });
  await queue.close();
  // The layout before queues moved under KEY_PREFIX.
  const push = new Queue('push', { connection, prefix: '{bull:push}' });
  await push.add('tx', { id: 'r1', wkIdentity: 'pairA', action: 'tx', done: [] }, { jobId: 'push-r1' });
  await push.close();
  connection.disconnect();
}

/**
 * The migration of tokens and queues to the hash-tagged layout: in place on a single Redis, and from the old
 * single Redis into a cluster (`--from`). Idempotent: a second run moves nothing and changes nothing.
 */
for (const name of ['standalone', 'cluster'] as TopologyName[]) {
  describe(`scripts/migrate-keys.ts into a ${name} Redis`, function () {
    this.timeout(60_000);
    let topology: TestTopology;
    before(async () => {
      topology = await startTopology(name);
    });
    after(() => topology?.stop());

    it('moves token sets and queued jobs; the relay then delivers and counts them', async () => {
      await seedOldLayout();
      const args = name === 'standalone' ? [] : ['--from', testRedis().url];
      const dry = migrate(topology.env, [...args, '--dry-run']);
      const owners = name === 'standalone' ? '' : 'would copy 3 token owner entrie(s)\n';
      expect(dry.stdout).to.equal(
        `would move 2 token set(s)\n${owners}queue support: would move 2 job(s)\nqueue push: would move 1 job(s)\n`,
      );
      expect(await redis().exists('relay:tokens:key:pairA')).to.equal(1);

      const run = migrate(topology.env, args);
      expect(run.stderr).to.equal('');
      expect(run.status).to.equal(0);
      expect(run.stdout).to.equal(
        `moved 2 token set(s)\n${owners.replace('would copy', 'copied')}queue support: moved 2 job(s)\n` +
          'queue push: moved 1 job(s)\n',
      );
      expect(run.stdout).not.to.contain('kt1');

      const admin = topology.admin;
      expect(await admin.zrange(keys.tokens('pairA', 'key'), 0, -1)).to.deep.equal(['kt1', 'kt2']);
      expect(await admin.zrange(keys.tokens('pairA', 'wallet'), 0, -1)).to.deep.equal(['wt1']);
      expect(await admin.pttl(keys.tokens('pairA', 'key'))).to.be.greaterThan(
        (TOKEN_TTL_SECONDS - 60) * 1000,
      );
      expect(await redis().keys('relay:tokens:key:pairA')).to.deep.equal([]);
      expect(await redis().keys('bull:*')).to.deep.equal([]);
      expect(await redis().keys('{bull:*')).to.deep.equal([]);

      expect(await admin.lrange('relay:{bull:support}:support:wait', 0, -1)).to.deep.equal(['contact-1']);
      expect(await admin.zrange('relay:{bull:support}:support:delayed', 0, -1)).to.deep.equal(['ticket-1']);
      expect(JSON.parse((await admin.hget('relay:{bull:support}:support:contact-1', 'data'))!)).to.deep.equal(
        {
          kind: 'contact',
          name: 'Ann',
        },
      );
      expect(JSON.parse((await admin.hget('relay:{bull:support}:support:contact-1', 'opts'))!)).to.include({
        attempts: 12,
      });
      expect(await admin.lrange('relay:{bull:push}:push:wait', 0, -1)).to.deep.equal(['push-r1']);

      expect(await admin.get(OWNER('wallet', 'wt1'))).to.equal('pairA');
      expect(await admin.ttl(OWNER('wallet', 'wt1'))).to.be.greaterThan(TOKEN_TTL_SECONDS - 60);

      const again = migrate(topology.env, args);
      expect(again.stdout).to.equal(`moved 0 token set(s)\n${owners.replace('would copy 3', 'copied 3')}`);

      // The relay delivers the migrated tokens to their pair and counts them.
      const api = await startTestApi(topology.env);
      try {
        const res = await post(api.url, '/v1/token', { wkIdentity: 'pairA', keyToken: 'kt3' });
        expect(res.body.data).to.deep.equal({ wkIdentity: 'pairA', keyTokens: 3, walletTokens: 1 });
        const store = new TokenStore(admin, keys, WriteAck.none);
        expect(await store.tokensFor('pairA', 'key')).to.deep.equal(['kt1', 'kt2', 'kt3']);
      } finally {
        await api.stop();
      }
    });
  });
}
