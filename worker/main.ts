import type { Config } from '../src/config.js';
import type { Logger } from '../src/log.js';
import type { RoleHandle } from '../src/role.js';

/** The worker role: BullMQ workers and job schedulers on the shared Redis. */
export async function startWorker(_config: Config, log: Logger): Promise<RoleHandle> {
  log.info('worker started');
  return {
    async stop() {
      log.info('worker stopped');
    },
  };
}
