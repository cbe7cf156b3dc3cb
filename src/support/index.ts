import type { Feature } from '../core/feature.js';
import { SUPPORT_VARIABLES, supportSettings } from './variables.js';
import { supportForms, type SupportDeps } from './routes.js';
import { startSupportWorker, type SupportWorkerDeps } from './worker.js';

export { SUPPORT_QUEUE } from './jobs.js';

/** Support forms queued for the helpdesk, and the worker part that delivers them. */
export const support = {
  config: { variables: SUPPORT_VARIABLES, settings: supportSettings },
  routes: supportForms,
  worker: startSupportWorker,
} satisfies Feature<SupportDeps, SupportWorkerDeps>;
