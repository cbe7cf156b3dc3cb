export { actionTypesExtra } from './action-types-schema.js';
export {
  ACTION_TYPES,
  BUILT_IN_ACTION_TYPES,
  actionTypeRule,
  addActionTypes,
  type ExtraActionType,
} from './action-types.js';
export { newRecordId } from './record-id.js';
export { actionRoutes, storedAction, type ActionEvents } from './routes.js';
export { actionBody } from './schema.js';
export { ActionStore } from './store.js';
