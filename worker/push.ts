import { Queue, Worker, type Job } from 'bullmq';
import type { Config } from '../src/config.js';
import type { Logger } from '../src/core/log.js';
import { logBullErrors } from '../src/core/queue/bull-errors.js';
import { queuePrefix } from '../src/core/queue/prefix.js';
import {
  deliverPush,
  PUSH_BACKOFF,
  PUSH_QUEUE,
  pushBackoff,
  pushJobOptions,
  type PushJob,
} from '../src/push/index.js';
import { createRedis } from '../src/core/redis/clients.js';
import type { RoleHandle } from '../src/core/role.js';
import { ActionStore } from '../src/mailbox/index.js';
import { keysFor } from '../src/core/redis/keys.js';
import { createPushSender, PushIntake, PushThrottle } from '../src/push/index.js';
import { TokenStore } from '../src/push/index.js';
import { WriteAck } from '../src/core/redis/write-ack.js';
import { deliveryProcessor, runQueueWorker } from './bullmq.js';

/** Pushes wait on the network, not the CPU: several jobs at a time keep a burst of actions moving. */
const CONCURRENCY = 8;
/**
 * A ceiling on push jobs per second for all workers together, far below FCM's quota. It is also what makes
 * BullMQ honour a manual rate limit (queue.rateLimit after a 429) across every worker of the queue.
 */
const LIMITER = { max: 500, duration: 1000 };

/** The push queue's worker over deliverPush, and the intake that fills the queue. */
export async function startPushWorker(config: Config, log: Logger): Promise<RoleHandle> {
  const sender = createPushSender(config.push);
  const keys = keysFor(config.keyPrefix);
  const storeRedis = createRedis(config.redis.topology, 'store');
  const ack = WriteAck.open(config.redis, keys);
  const actions = new ActionStore(storeRedis, keys, config.action.ttlSeconds, ack);
  const tokens = new TokenStore(storeRedis, keys, ack);
  const throttle = new PushThrottle(storeRedis, keys, config.push.perPairPerMinute, config.action.ttlSeconds);
  const redis = createRedis(config.redis.topology, 'worker');
  const prefix = queuePrefix(config.keyPrefix, PUSH_QUEUE);
  // For the queue-depth metric, rateLimit() and the intake's jobs.
  const queue = new Queue(PUSH_QUEUE, { connection: redis, prefix, skipVersionCheck: true });
  logBullErrors(queue, 'push queue', log);

  const parts = { sender, actions, tokens, throttle, retryBaseMs: config.push.retryBaseMs, log };
  const push = deliveryProcessor(queue, log, (job: Job<PushJob>, signal) => deliverPush(parts, job, signal));

  const worker = new Worker<PushJob>(PUSH_QUEUE, push, {
    connection: redis,
    prefix,
    concurrency: CONCURRENCY,
    limiter: LIMITER,
    settings: { backoffStrategy: pushBackoff },
  });
  log.info('push worker started', { queue: PUSH_QUEUE, provider: sender.name, backoff: PUSH_BACKOFF });
  if (sender.name === 'log') log.warn('PUSH_PROVIDER=log: push notifications reach no device');
  const intake = new PushIntake({
    redis: createRedis(config.redis.topology, 'worker'),
    keys,
    queue,
    jobOptions: pushJobOptions(config.push, config.action.ttlSeconds),
    claimIdleMs: config.push.intakeClaimMs,
    livenessIntervalMs: config.redis.livenessIntervalMs,
    log,
  });
  intake.start();
  const jobs = runQueueWorker(
    {
      worker,
      queue,
      describe: (job) => ({ action: job.data.action }),
      connections: [storeRedis, redis],
      graceMs: config.shutdownTimeoutMs,
    },
    log,
  );
  return {
    async stop() {
      await intake.stop();
      await jobs.stop();
      await ack.close();
    },
  };
}
