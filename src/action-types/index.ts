export { checkUnsignedActions, readActionTypesExtra } from './config.js';
export {
  BUILT_IN_ACTION_TYPES,
  REPLAY_SIDE,
  actionTypeRule,
  addActionTypes,
  pushSide,
  unsignedGuard,
  type ExtraActionType,
} from './table.js';
