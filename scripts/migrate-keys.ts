/**
 * Moves a running deployment's data to the hash-tagged key layout (docs/operations.md §key layout):
 *
 * - push-token sets `<prefix>tokens:<side>:<id>` → `<prefix>tokens:<side>:{<id>}`, merged into whatever the new
 *   relay already registered there (the newer registration time wins); owner entries keep their names and, when
 *   moving to another Redis, are copied unless the new relay already wrote one;
 * - BullMQ jobs of the earlier layouts, `bull:<queue>:…` and `{bull:<queue>}:<queue>:…` (before queues moved
 *   under KEY_PREFIX), → `<KEY_PREFIX>{bull:<queue>}:<queue>:…`, re-added with their ids, data and options (a job
 *   already moved is not added twice); job-scheduler runs are skipped: the new workers schedule their own. The
 *   earlier layouts had no deployment prefix: run it for one deployment only where several share a Redis.
 *
 * `npm run migrate-keys -- [--from redis://old-redis:6379] [--retry-failed] [--dry-run]`
 * The target is the configured topology (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES); the source is
 * `--from` (the old single Redis, when moving to another topology) or the target itself. Run it after the new
 * version is deployed; it is idempotent, so run it again if it was interrupted. Failed jobs stay in the old queue
 * unless `--retry-failed` re-queues them. Prints counts only: tokens and jobs' data are personal data.
 */
import { Queue, type Job } from 'bullmq';
import { Cluster } from 'ioredis';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { queuePrefix } from '../src/core/queue/prefix.js';
import { createRedis, waitReady, type RedisClient } from '../src/core/redis/clients.js';
import { SIDES } from '../src/core/sides.js';

/** The queue prefixes of the earlier layouts, and a pattern of each one's queue meta keys. */
const OLD_QUEUE_LAYOUTS = [
  { prefix: () => 'bull', metaPattern: 'bull:*:meta', nameOf: (key: string) => key.split(':')[1]! },
  {
    prefix: (name: string) => `{bull:${name}}`,
    metaPattern: '{bull:*}:*:meta',
    nameOf: (key: string) => key.slice(key.indexOf('}:') + 2, -':meta'.length),
  },
];
const MOVED_STATES = ['waiting', 'paused', 'prioritized', 'delayed', 'active', 'waiting-children'] as const;

/** Every key matching `pattern`, from every master of a cluster. */
async function scanAll(client: RedisClient, pattern: string): Promise<string[]> {
  const nodes = client instanceof Cluster ? client.nodes('master') : [client];
  const found: string[] = [];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      found.push(...keys);
      cursor = next;
    } while (cursor !== '0');
  }
  return found;
}

async function migrateTokens(source: RedisClient, target: RedisClient, prefix: string, dryRun: boolean) {
  let sets = 0;
  for (const side of SIDES) {
    const head = `${prefix}tokens:${side}:`;
    for (const oldKey of await scanAll(source, `${head}*`)) {
      const id = oldKey.slice(head.length);
      if (id.startsWith('{')) continue; // already the new layout
      sets++;
      if (dryRun) continue;
      const newKey = `${head}{${id}}`;
      const entries = await source.zrange(oldKey, 0, -1, 'WITHSCORES');
      const ttl = await source.pttl(oldKey);
      for (let i = 0; i < entries.length; i += 2) {
        await target.zadd(newKey, 'GT', entries[i + 1]!, entries[i]!);
      }
      const current = await target.pttl(newKey);
      if (ttl > 0 && (current < 0 || current < ttl)) await target.pexpire(newKey, ttl);
      await source.del(oldKey);
    }
  }
  return sets;
}

/** Owner entries keep their names: only a move to another Redis copies them, never over a newer one. */
async function copyOwners(source: RedisClient, target: RedisClient, prefix: string, dryRun: boolean) {
  const owners = await scanAll(source, `${prefix}tokens:owner:*`);
  if (dryRun) return owners.length;
  for (const key of owners) {
    const [owner, ttl] = await Promise.all([source.get(key), source.pttl(key)]);
    if (owner !== null && ttl !== -2) {
      await (ttl > 0 ? target.set(key, owner, 'PX', ttl, 'NX') : target.set(key, owner, 'NX'));
    }
  }
  return owners.length;
}

/** Milliseconds a delayed job still has to wait. */
function remainingDelay(job: Job): number {
  return Math.max(0, job.timestamp + (job.opts.delay ?? 0) - Date.now());
}

async function migrateQueue(
  source: RedisClient,
  target: RedisClient,
  name: string,
  oldPrefix: string,
  options: Flags & { keyPrefix: string },
) {
  const old = new Queue(name, { connection: source, prefix: oldPrefix });
  const next = new Queue(name, { connection: target, prefix: queuePrefix(options.keyPrefix, name) });
  const states = options.retryFailed ? [...MOVED_STATES, 'failed' as const] : MOVED_STATES;
  let moved = 0;
  for (const job of await old.getJobs([...states])) {
    if (job.repeatJobKey) continue; // a scheduler's run: the new workers schedule their own
    moved++;
    if (options.dryRun) continue;
    const { repeat: _repeat, delay: _delay, ...opts } = job.opts;
    await next.add(job.name, job.data, { ...opts, jobId: job.id!, delay: remainingDelay(job) });
    await job.remove().catch(() => undefined); // an active job's lock may outlive its old worker
  }
  const leftFailed = await old.getFailedCount();
  if (!options.dryRun && leftFailed === 0) await old.obliterate({ force: true });
  await Promise.all([old.close(), next.close()]);
  return { moved, leftFailed };
}

interface Flags {
  from: string | undefined;
  retryFailed: boolean;
  dryRun: boolean;
}

const { values } = parseArgs({
  options: {
    from: { type: 'string' },
    'retry-failed': { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
  },
});
const flags: Flags = { from: values.from, retryFailed: values['retry-failed'], dryRun: values['dry-run'] };

const config = loadConfig();
const target = createRedis(config.redis.topology, 'worker');
const source = flags.from
  ? createRedis({ kind: 'standalone', url: flags.from, explicit: true }, 'worker')
  : target;
let code = 0;
try {
  await Promise.all([waitReady(target, 10_000), waitReady(source, 10_000)]);
  const sets = await migrateTokens(source, target, config.keyPrefix, flags.dryRun);
  const write = (line: string) => process.stdout.write(line + '\n');
  write(`${flags.dryRun ? 'would move' : 'moved'} ${sets} token set(s)`);
  if (source !== target) {
    const owners = await copyOwners(source, target, config.keyPrefix, flags.dryRun);
    write(`${flags.dryRun ? 'would copy' : 'copied'} ${owners} token owner entrie(s)`);
  }
  for (const layout of OLD_QUEUE_LAYOUTS) {
    const queues = new Set((await scanAll(source, layout.metaPattern)).map(layout.nameOf));
    for (const name of [...queues].sort()) {
      const oldPrefix = layout.prefix(name);
      // An empty KEY_PREFIX keeps the `{bull:<queue>}` layout: nothing to move.
      if (source === target && oldPrefix === queuePrefix(config.keyPrefix, name)) continue;
      const options = { ...flags, keyPrefix: config.keyPrefix };
      const { moved, leftFailed } = await migrateQueue(source, target, name, oldPrefix, options);
      const left = leftFailed > 0 ? `; ${leftFailed} failed job(s) left under ${oldPrefix}:${name}:` : '';
      write(`queue ${name}: ${flags.dryRun ? 'would move' : 'moved'} ${moved} job(s)${left}`);
    }
  }
} catch (err) {
  process.stderr.write(`migrate-keys: ${(err as Error).message}\n`);
  code = 1;
} finally {
  source.disconnect();
  target.disconnect();
}
process.exit(code);
