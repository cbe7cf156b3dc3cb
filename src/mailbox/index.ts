import type { Feature } from '../core/feature.js';
import { actionRoutes, type ActionDeps } from './routes.js';

export { type ActionEvents } from './routes.js';
export { actionBody } from './schema.js';
export { ActionStore, type ActionRecord } from './store.js';

/** The pair's action mailbox: a request from one app, the reply from the other. */
export const mailbox: Feature<ActionDeps> = { routes: actionRoutes };
