import type { Config } from '../src/config.js';
import type { Logger } from '../src/log.js';
import type { RoleHandle } from '../src/role.js';
import { startRefresh } from './refresh.js';

/** The worker role: BullMQ workers and job schedulers on the shared Redis. */
export async function startWorker(config: Config, log: Logger): Promise<RoleHandle> {
  const refresh = await startRefresh(config, log);
  log.info('worker started');
  return {
    async stop() {
      await refresh.stop();
      log.info('worker stopped');
    },
  };
}
