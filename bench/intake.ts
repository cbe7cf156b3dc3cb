/**
 * Where a push's job is made, measured in this process on the benchmark's Redis: BullMQ's `Queue.add` per job
 * (what the API paid per pushed write before push intents), against the worker's intake per intent (reading the
 * stream, the token count, `addBulk`, acknowledging). Both with the same options, for pairs that each have a
 * key token, 64 at a time for `add` as under the benchmark's load.
 */
import { Queue } from 'bullmq';
import { createLogger } from '../src/core/log.js';
import { encodeIntent } from '../src/push/intent.js';
import { PUSH_QUEUE, pushJobId, pushJobOptions, type PushJob } from '../src/push/jobs.js';
import { queuePrefix } from '../src/core/queue/prefix.js';
import { createRedis, type RedisClient } from '../src/core/redis/clients.js';
import { keysFor } from '../src/core/redis/keys.js';
import { PushIntake } from '../src/push/intake.js';
import { median } from './load.js';
import type { Phase } from './phase.js';

const PUSH = { retryBaseMs: 2000, maxAttempts: 8 } as const;
const TTL_SECONDS = 900;
const keys = keysFor('bench-intake:');

export interface IntakeFigures {
  intents: number;
  /** µs of this process's CPU per job added with Queue.add, as the API did. */
  addUs: number;
  /** µs of this process's CPU per intent taken by the intake. */
  intakeUs: number;
}

function records(round: number, count: number): Required<PushJob>[] {
  const expiresAt = new Date(Date.now() + TTL_SECONDS * 1000).toISOString();
  const createdAt = new Date().toISOString();
  return Array.from({ length: count }, (_, i) => ({
    id: `r${round}-${i}`,
    wkIdentity: `bc1qbench${i}`,
    action: 'tx',
    expiresAt,
    createdAt,
    done: [],
  }));
}

const cpuUs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return used.user + used.system;
};

async function viaAdd(queue: Queue, jobs: PushJob[]): Promise<number> {
  const options = pushJobOptions(PUSH, TTL_SECONDS);
  const start = process.cpuUsage();
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      for (let job = jobs[next++]; job; job = jobs[next++])
        await queue.add(job.action, job, { ...options, jobId: pushJobId(job) });
    }),
  );
  return cpuUs(start) / jobs.length;
}

async function viaIntake(
  url: string,
  queue: Queue,
  admin: RedisClient,
  jobs: Required<PushJob>[],
): Promise<number> {
  for (const job of jobs) await admin.xadd(keys.pushIntents, '*', ...encodeIntent(job));
  const intake = new PushIntake({
    redis: createRedis({ kind: 'standalone', url, explicit: true }, 'worker'),
    keys,
    queue,
    jobOptions: pushJobOptions(PUSH, TTL_SECONDS),
    claimIdleMs: 30_000,
    livenessIntervalMs: 10_000,
    log: createLogger('error', {}, () => {}),
  });
  const start = process.cpuUsage();
  intake.start();
  while ((await admin.xlen(keys.pushIntents)) > 0) await new Promise((r) => setTimeout(r, 20));
  const us = cpuUs(start) / jobs.length;
  await intake.stop();
  return us;
}

export async function intakePhase(url: string, rounds: number, count = 4000): Promise<IntakeFigures> {
  const topology = { kind: 'standalone', url, explicit: true } as const;
  const admin = createRedis(topology, 'worker');
  const queueClient = createRedis(topology, 'worker');
  const queue = new Queue(PUSH_QUEUE, {
    connection: queueClient,
    prefix: queuePrefix('bench-intake:', PUSH_QUEUE),
  });
  const since = Date.now();
  for (let i = 0; i < count; i++) await admin.zadd(keys.tokens(`bc1qbench${i}`, 'key'), since, `token${i}`);
  const add: number[] = [];
  const intake: number[] = [];
  for (let round = 0; round < rounds; round++) {
    add.push(await viaAdd(queue, records(2 * round, count)));
    intake.push(await viaIntake(url, queue, admin, records(2 * round + 1, count)));
  }
  await queue.close();
  queueClient.disconnect();
  admin.disconnect();
  return { intents: count, addUs: Math.round(median(add)), intakeUs: Math.round(median(intake)) };
}

export const intake: Phase<IntakeFigures> = {
  name: 'intake',
  key: 'intake',
  async run({ redisUrl, rounds, out }) {
    const figures = await intakePhase(redisUrl, rounds);
    out(
      `a push job's making, µs of CPU (median of ${rounds} rounds of ${figures.intents}, in the benchmark process):`,
    );
    out(`  Queue.add per job (the API's share before push intents) ${figures.addUs}`);
    out(`  the worker's intake per intent                          ${figures.intakeUs}`);
    out();
    return figures;
  },
};
