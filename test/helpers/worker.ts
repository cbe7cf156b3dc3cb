import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/core/log.js';
import type { RoleHandle } from '../../src/core/role.js';
import { startWorker } from '../../worker/main.js';
import { testEnv } from './api.js';

export interface TestWorker {
  config: Config;
  handle: RoleHandle;
  /** Every log line the worker wrote, parsed. */
  logs: Record<string, unknown>[];
  stop(): Promise<void>;
}

/** Worker defaults for tests: fast retries and stall recovery, so delivery semantics run in seconds. */
export const FAST_DELIVERY = {
  HELPDESK_RETRY_BASE_MS: '50',
  HELPDESK_TIMEOUT_MS: '2000',
  HELPDESK_LOCK_MS: '2500',
  HELPDESK_STALLED_CHECK_MS: '500',
};

/** The real worker role (real BullMQ on the test Redis) in this process. */
export async function startTestWorker(overrides: Record<string, string> = {}): Promise<TestWorker> {
  const config = loadConfig(testEnv({ ...FAST_DELIVERY, ...overrides }));
  const logs: Record<string, unknown>[] = [];
  const log = createLogger(config.logLevel, {}, (line) => logs.push(JSON.parse(line)));
  const handle = await startWorker(config, log);
  return { config, handle, logs, stop: () => handle.stop() };
}
