export { actionTypesExtra } from './action-types-schema.js';
export {
  ACTION_TYPES,
  BUILT_IN_ACTION_TYPES,
  SIDES,
  actionTypeRule,
  addActionTypes,
  pushSide,
  type ExtraActionType,
  type Side,
} from './action-types.js';
export { newRecordId } from './record-id.js';
export { actionRead, actionRoutes, actionWrite, storedAction, type ActionEvents } from './routes.js';
export { actionBody } from './schema.js';
export { ActionStore } from './store.js';
export { checkUnsignedActions, readActionTypesExtra } from './action-types-config.js';
