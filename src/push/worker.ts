import { Queue, Worker, type Job } from 'bullmq';
import type { CoreConfig } from '../core/config/config.js';
import type { Logger } from '../core/log.js';
import { logBullErrors } from '../core/queue/bull-errors.js';
import { queuePrefix } from '../core/queue/prefix.js';
import { deliveryProcessor, runQueueWorker } from '../core/queue/worker.js';
import { createRedis, type RedisClient } from '../core/redis/clients.js';
import type { Keys } from '../core/redis/keys.js';
import type { RoleHandle } from '../core/role.js';
import { createPushSender, type PushSettings } from './fcm/index.js';
import { deliverPush, pushBackoff, type PushDeliveryParts } from './delivery.js';
import { PushIntake, type AckPresence } from './intake.js';
import { PUSH_BACKOFF, PUSH_QUEUE, pushJobOptions, type PushJob } from './jobs.js';
import { RedisReceipts } from './receipts.js';
import { PushThrottle } from './throttle.js';
import type { TokenStore } from './tokens/store.js';

/** What the push worker uses of the worker role: its store client, key names and the stores it reads. */
export interface PushWorkerDeps {
  config: CoreConfig & { push: PushSettings; action: { ttlSeconds: number } };
  log: Logger;
  redis: RedisClient;
  keys: Keys;
  stores: { actions: PushDeliveryParts['actions']; tokens: TokenStore; presence: AckPresence };
}

/** Pushes wait on the network, not the CPU: several jobs at a time keep a burst of actions moving. */
const CONCURRENCY = 8;
/**
 * A ceiling on push jobs per second for all workers together, far below FCM's quota. It is also what makes
 * BullMQ honour a manual rate limit (queue.rateLimit after a 429) across every worker of the queue.
 */
const LIMITER = { max: 500, duration: 1000 };

/** The push queue's worker over deliverPush, and the intake that fills the queue. */
export async function startPushWorker(deps: PushWorkerDeps): Promise<RoleHandle> {
  const { config, log, keys, stores } = deps;
  const { actions, tokens } = stores;
  const sender = createPushSender(config.push);
  const throttle = new PushThrottle(deps.redis, keys, config.push.perPairPerMinute, config.action.ttlSeconds);
  const redis = createRedis(config.redis.topology, 'worker');
  const prefix = queuePrefix(config.keyPrefix, PUSH_QUEUE);
  // For the queue-depth metric, rateLimit() and the intake's jobs.
  const queue = new Queue(PUSH_QUEUE, { connection: redis, prefix, skipVersionCheck: true });
  logBullErrors(queue, 'push queue', log);

  const receipts = new RedisReceipts(deps.redis, keys);
  const parts = { sender, actions, tokens, throttle, receipts, retryBaseMs: config.push.retryBaseMs, log };
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
    grace: { ms: config.push.ackGraceMs, presence: stores.presence },
    livenessIntervalMs: config.redis.livenessIntervalMs,
    log,
  });
  intake.start();
  const jobs = runQueueWorker(
    {
      worker,
      queue,
      describe: (job) => ({ action: job.data.action }),
      connections: [redis],
      graceMs: config.shutdownTimeoutMs,
    },
    log,
  );
  return {
    async stop() {
      await intake.stop();
      await jobs.stop();
    },
  };
}
