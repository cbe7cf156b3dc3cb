/**
 * Operators' view of the relay's queues (support, push, refresh) under this deployment's KEY_PREFIX:
 * `npm run jobs -- [--queue <name>] failed | retry <id> | retry-all`; without `--queue`, every queue.
 * Prints ids, states, attempts and failure reasons only: a job's data is personal data (read its hash with
 * redis-cli when you must, see docs/operations.md).
 */
import { Queue, type Job } from 'bullmq';
import { once } from 'node:events';
import { loadConfig, type Config } from '../src/config.js';
import { ConfigError, type RedisTopology } from '../src/core/config/config.js';
import { queuePrefix } from '../src/core/queue/prefix.js';
import { PUSH_QUEUE } from '../src/push/index.js';
import { SUPPORT_QUEUE } from '../src/support/index.js';
import { REFRESH_QUEUE } from '../src/market/index.js';
import { createRedis, waitReady } from '../src/core/redis/clients.js';
import { redisAddress } from '../src/core/redis/outage-log.js';

const PAGE = 100;
/** The variable that says where Redis is, for each topology. */
const TOPOLOGY_VARIABLE: Record<RedisTopology['kind'], string> = {
  standalone: 'REDIS_URL',
  sentinel: 'REDIS_SENTINELS',
  cluster: 'REDIS_CLUSTER_NODES',
};
const QUEUES = [SUPPORT_QUEUE, PUSH_QUEUE, REFRESH_QUEUE];
const USAGE = `usage: npm run jobs -- [--queue ${QUEUES.join('|')}] failed | retry <job id> | retry-all`;
const CONNECT_TIMEOUT_MS = 5000;

function describe(job: Job): string {
  const failedAt = job.finishedOn ? new Date(job.finishedOn).toISOString() : '-';
  return `${job.id}  ${job.name}  attempts ${job.attemptsMade}/${job.opts.attempts ?? 1}  failed ${failedAt}  ${job.failedReason ?? ''}`;
}

async function failedJobs(queue: Queue): Promise<Job[]> {
  const jobs: Job[] = [];
  for (let start = 0; ; start += PAGE) {
    const page = await queue.getFailed(start, start + PAGE - 1);
    jobs.push(...page);
    if (page.length < PAGE) return jobs;
  }
}

/** A retried job starts over with all its attempts. */
async function retry(job: Job): Promise<void> {
  await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
}

async function run(queues: Queue[], command: Command, id: string | undefined): Promise<number> {
  const write = (line: string) => process.stdout.write(line + '\n');
  switch (command) {
    case 'failed': {
      for (const queue of queues) {
        const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed');
        write(
          `${queue.name}: ` +
            Object.entries(counts)
              .map(([state, n]) => `${state} ${n}`)
              .join(', '),
        );
        for (const job of await failedJobs(queue)) write(describe(job));
      }
      return 0;
    }
    case 'retry': {
      // Job ids name their kind (push-…, ticket-…, contact-…), so one id is in one queue at most.
      for (const queue of queues) {
        const job = await queue.getJob(id!);
        if (!job) continue;
        const state = await job.getState();
        if (state !== 'failed') return fail(`job ${id} is ${state}, not failed`);
        await retry(job);
        write(`retrying ${id}`);
        return 0;
      }
      return fail(`no job ${id}`);
    }
    case 'retry-all': {
      for (const queue of queues) {
        const jobs = await failedJobs(queue);
        for (const job of jobs) await retry(job);
        write(`${queue.name}: retrying ${jobs.length} failed job(s)`);
      }
      return 0;
    }
  }
}

function fail(message: string): number {
  process.stderr.write(message + '\n');
  return 1;
}

type Command = 'failed' | 'retry' | 'retry-all';

interface Args {
  queues: string[];
  command: Command;
  id?: string;
}

/** The command line, checked before anything connects: a mistake gets the usage whether Redis answers or not. */
function parseArgs(argv: string[]): Args | undefined {
  let queues = QUEUES;
  if (argv[0] === '--queue') {
    if (!QUEUES.includes(argv[1]!)) return undefined;
    queues = [argv[1]!];
    argv = argv.slice(2);
  }
  const [command, id, ...extra] = argv;
  if (extra.length > 0) return undefined;
  if (command === 'retry') return id ? { queues, command, id } : undefined;
  if ((command === 'failed' || command === 'retry-all') && id === undefined) return { queues, command };
  return undefined;
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  if (!args) return fail(USAGE);
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) return fail(`jobs: invalid configuration: ${err.message}`);
    throw err;
  }
  const redis = createRedis(config.redis.topology, 'queue');
  try {
    try {
      // The first failed connect is the answer: an operator waits for no retries.
      const failed = once(redis, 'error').then(([err]) => Promise.reject(err as Error));
      await Promise.race([waitReady(redis, CONNECT_TIMEOUT_MS), failed]);
    } catch (err) {
      return fail(
        `jobs: cannot reach Redis at ${redisAddress(redis)} (${TOPOLOGY_VARIABLE[config.redis.topology.kind]}): ` +
          (err as Error).message,
      );
    }
    // No version check: its plain-text eviction warning would mix into this output. Without an error listener
    // BullMQ prints raw stacks; a failure reaches the operator through the command that failed.
    const queues = args.queues.map((name) => {
      const queue = new Queue(name, {
        connection: redis,
        prefix: queuePrefix(config.keyPrefix, name),
        skipVersionCheck: true,
      });
      queue.on('error', () => undefined);
      return queue;
    });
    try {
      return await run(queues, args.command, args.id);
    } finally {
      await Promise.all(queues.map((queue) => queue.close()));
    }
  } catch (err) {
    return fail(`jobs: ${(err as Error).message}`);
  } finally {
    redis.disconnect();
  }
}

process.exit(await main());
