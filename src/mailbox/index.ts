import type { Feature } from '../core/feature.js';
import { actionRoutes, type ActionDeps } from './routes.js';

export { actionTypesExtra } from './action-types-schema.js';
export {
  BUILT_IN_ACTION_TYPES,
  REPLAY_SIDE,
  actionTypeRule,
  addActionTypes,
  pushSide,
  unsignedGuard,
  type ExtraActionType,
} from './action-types.js';
export { newRecordId } from './record-id.js';
export { type ActionEvents } from './routes.js';
export { actionBody } from './schema.js';
export { ActionStore } from './store.js';
export { checkUnsignedActions, readActionTypesExtra } from './action-types-config.js';

/** The pair's action mailbox: a request from one app, the reply from the other. */
export const mailbox: Feature<ActionDeps> = { name: 'mailbox', routes: actionRoutes };
