import { addActionTypes } from '../src/mailbox/index.js';
import type { Config } from '../src/config.js';
import type { Logger } from '../src/core/log.js';
import type { RoleHandle } from '../src/core/role.js';
import { startPushWorker } from './push.js';
import { startRefresh } from './refresh.js';
import { startSupportWorker } from './support.js';

type SubWorker = (config: Config, log: Logger) => Promise<RoleHandle>;

/** Everything the worker role runs, each with its own Redis connection; add a line to add one. */
const SUB_WORKERS: SubWorker[] = [startSupportWorker, startPushWorker, startRefresh];

/** The worker role: BullMQ workers and job schedulers on the shared Redis. */
export async function startWorker(config: Config, log: Logger): Promise<RoleHandle> {
  addActionTypes(config.actionTypesExtra);
  const started: RoleHandle[] = [];
  const stopAll = () => Promise.allSettled(started.map((handle) => handle.stop()));
  try {
    for (const start of SUB_WORKERS) started.push(await start(config, log));
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
