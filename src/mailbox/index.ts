import type { Feature } from '../core/feature.js';
import { MAILBOX_VARIABLES, mailboxSettings } from './variables.js';
import { actionRoutes, type ActionDeps } from './routes.js';

export { ackParams } from './schema.js';
export { type ActionEvents } from './routes.js';
export { actionBody, streamEpoch, streamPosition } from './schema.js';
export { ackMetrics, streamMetrics } from './metrics.js';
export { LongPolls, type StoredSignals, type Watch } from './long-poll.js';
export { acknowledge, type ReceiptEvents } from './acks.js';
export {
  ActionStore,
  type AckResult,
  type ActionRecord,
  type DeliveredEvent,
  type ReceiptNotice,
  type StreamPosition,
  type StreamRead,
  type DeliveredPosition,
} from './store.js';

/** The pair's action mailbox: a request from one app, the reply from the other. */
export const mailbox = {
  config: { variables: MAILBOX_VARIABLES, settings: mailboxSettings },
  routes: actionRoutes,
} satisfies Feature<ActionDeps>;
