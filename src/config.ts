import { readConfig, runs, type Config, type Source } from './core/config/config.js';
import { VARIABLES } from './core/config/variables.js';
import { checkUnsignedActions, readActionTypesExtra, type ExtraActionType } from './mailbox/index.js';
import { readServiceAccount, type PushSettings } from './push/index.js';

/** The core configuration and what features read themselves: the operator's action types, the FCM key. */
export type RelayConfig = Omit<Config, 'push'> & {
  push: PushSettings;
  /** Operator rows merged into the action-type table at start-up (ACTION_TYPES_EXTRA). */
  actionTypesExtra: ExtraActionType[];
};

/**
 * Credentials of a third party (FCM, a helpdesk) are needed only where jobs are delivered: a role that delivers
 * refuses to start without them (every job would fail); API pods only queue, so they need none and hold none.
 */
export function loadConfig(source: Source = process.env): RelayConfig {
  const { config, values } = readConfig(source);
  const actionTypesExtra = readActionTypesExtra(values.ACTION_TYPES_EXTRA);
  checkUnsignedActions(config.auth.unsignedActions, actionTypesExtra);
  const file = values.FCM_SERVICE_ACCOUNT_FILE;
  const sends = config.push.provider === 'fcm' && runs(config.role, VARIABLES.FCM_SERVICE_ACCOUNT_FILE.roles);
  return {
    ...config,
    push: { ...config.push, serviceAccount: sends ? readServiceAccount(file!) : undefined },
    actionTypesExtra,
  };
}
