import type { Config } from '../src/config.js';
import type { Logger } from '../src/core/log.js';
import { createRedis } from '../src/core/redis/clients.js';
import type { RoleHandle } from '../src/core/role.js';
import type { Feature } from '../src/core/feature.js';
import type { WorkerDeps } from '../src/deps.js';
import { FEATURES } from '../src/features.js';
import { addActionTypes } from '../src/action-types/index.js';
import { openKeys, openStores } from '../src/stores.js';

/** The worker role: each feature's worker part (BullMQ workers and job schedulers) on the shared Redis. */
export async function startWorker(config: Config, log: Logger): Promise<RoleHandle> {
  addActionTypes(config.actionTypesExtra);
  const redis = createRedis(config.redis.topology, 'store');
  const { keys, ack } = openKeys(config);
  const stores = openStores(config, { store: redis, actions: redis }, keys, ack);
  const started: RoleHandle[] = [];
  const stopAll = async () => {
    await Promise.allSettled(started.map((handle) => handle.stop()));
    redis.disconnect();
    await ack.close();
  };
  try {
    const features: readonly Feature<unknown, WorkerDeps>[] = FEATURES;
    for (const feature of features) {
      if (feature.worker) started.push(await feature.worker({ config, log, redis, keys, stores }));
    }
  } catch (err) {
    await stopAll();
    throw err;
  }
  log.info('worker started');
  return {
    async stop() {
      await stopAll();
      log.info('worker stopped');
    },
  };
}
