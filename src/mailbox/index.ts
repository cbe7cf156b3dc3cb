import type { Feature } from '../core/feature.js';
import { MAILBOX_VARIABLES, mailboxSettings } from './variables.js';
import { actionRoutes, type ActionDeps } from './routes.js';

export { type ActionEvents } from './routes.js';
export { actionBody, streamEpoch, streamPosition } from './schema.js';
export { streamMetrics } from './metrics.js';
export { LongPolls, type StoredSignals, type Watch } from './long-poll.js';
export { ActionStore, type ActionRecord, type StreamPosition, type StreamRead } from './store.js';

/** The pair's action mailbox: a request from one app, the reply from the other. */
export const mailbox = {
  config: { variables: MAILBOX_VARIABLES, settings: mailboxSettings },
  routes: actionRoutes,
} satisfies Feature<ActionDeps>;
