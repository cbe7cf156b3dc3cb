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
export { actionRead, actionRoutes, actionWrite, storedAction, type ActionEvents } from './routes.js';
export { actionBody } from './schema.js';
export { ActionStore } from './store.js';
export { checkUnsignedActions, readActionTypesExtra } from './action-types-config.js';
export { MAILBOX_VARIABLES as variables, mailboxSettings as settings } from './variables.js';
