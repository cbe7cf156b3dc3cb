/**
 * Operators' view of the support queue: `npm run jobs -- failed | retry <id> | retry-all`.
 * Prints ids, states, attempts and failure reasons only: a job's data is personal data (read its hash with
 * redis-cli when you must, see docs/operations.md).
 */
import { Queue, type Job } from 'bullmq';
import { loadConfig } from '../src/config.js';
import { queuePrefix } from '../src/queue/prefix.js';
import { SUPPORT_QUEUE } from '../src/queue/support-jobs.js';
import { createRedis, waitReady } from '../src/redis/clients.js';

const PAGE = 100;
const USAGE = 'usage: npm run jobs -- failed | retry <job id> | retry-all';

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

async function run(queue: Queue, command: string | undefined, id: string | undefined): Promise<number> {
  const write = (line: string) => process.stdout.write(line + '\n');
  switch (command) {
    case 'failed': {
      const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed');
      write(
        Object.entries(counts)
          .map(([state, n]) => `${state} ${n}`)
          .join(', '),
      );
      for (const job of await failedJobs(queue)) write(describe(job));
      return 0;
    }
    case 'retry': {
      const job = id ? await queue.getJob(id) : undefined;
      if (!job) return fail(`no job ${id ?? '(missing id)'}`);
      const state = await job.getState();
      if (state !== 'failed') return fail(`job ${id} is ${state}, not failed`);
      await retry(job);
      write(`retrying ${id}`);
      return 0;
    }
    case 'retry-all': {
      const jobs = await failedJobs(queue);
      for (const job of jobs) await retry(job);
      write(`retrying ${jobs.length} failed job(s)`);
      return 0;
    }
    default:
      return fail(USAGE);
  }
}

function fail(message: string): number {
  process.stderr.write(message + '\n');
  return 1;
}

const config = loadConfig();
const redis = createRedis(config.redis.topology, 'failFast');
let code: number;
try {
  await waitReady(redis, 5000);
  const queue = new Queue(SUPPORT_QUEUE, { connection: redis, prefix: queuePrefix(SUPPORT_QUEUE) });
  code = await run(queue, process.argv[2], process.argv[3]);
  await queue.close();
} catch (err) {
  code = fail(`jobs: ${(err as Error).message}`);
} finally {
  redis.disconnect();
}
process.exit(code);
