import { coreConfig, readValues, runs, type CoreConfig, type Source } from './core/config/config.js';
import { CORE_VARIABLES, type ValuesOf } from './core/config/variables.js';
import { FEATURES } from './features.js';
import { checkUnsignedActions, readActionTypesExtra, type ExtraActionType } from './action-types/index.js';
import { readServiceAccount, type PushSettings } from './push/index.js';

/** Each feature's variables and the config group they shape, in the order of the README's table (after the kernel's). */
const FEATURE_CONFIGS = FEATURES.flatMap((feature) => ('config' in feature ? [feature.config] : []));

type FeatureConfig = (typeof FEATURE_CONFIGS)[number];
type Intersection<U> = (U extends unknown ? (part: U) => void : never) extends (all: infer I) => void
  ? I
  : never;

const TABLES = [CORE_VARIABLES, ...FEATURE_CONFIGS.map((feature) => feature.variables)];

/** Every variable the relay reads: the kernel's, then each feature's (`npm run docs:config` renders them). */
export const VARIABLES = Object.assign({}, ...TABLES) as typeof CORE_VARIABLES &
  Intersection<FeatureConfig['variables']>;

const twice = TABLES.flatMap(Object.keys).find((name, index, names) => names.indexOf(name) !== index);
if (twice !== undefined) throw new Error(`${twice} is declared by two features`);

export type Values = ValuesOf<typeof VARIABLES>;

/** The kernel's configuration, and each feature's group beside it. */
export type ReadConfig = CoreConfig & Intersection<ReturnType<FeatureConfig['settings']>>;

/** The relay's configuration: what the variables shape, and what features read themselves (the FCM key). */
export type Config = Omit<ReadConfig, 'push'> & {
  push: PushSettings;
  /** Operator rows merged into the action-type table at start-up (ACTION_TYPES_EXTRA). */
  actionTypesExtra: ExtraActionType[];
};

/** The configuration read from `source` (the environment, over CONFIG_FILE), and the values behind it. */
export function readConfig(source: Source): { config: ReadConfig; values: Values } {
  const { values, set } = readValues(source, VARIABLES);
  const config = Object.assign(
    coreConfig(values, set),
    ...FEATURE_CONFIGS.map((feature) => feature.settings(values)),
  ) as ReadConfig;
  return { config, values };
}

/** Every variable the loader understands, for drift checks of manifests against the code. */
export function knownEnvVars(): string[] {
  return Object.keys(VARIABLES).sort();
}

/**
 * Credentials of a third party (FCM, a helpdesk) are needed only where jobs are delivered: a role that delivers
 * refuses to start without them (every job would fail); API pods only queue, so they need none and hold none.
 */
export function loadConfig(source: Source = process.env): Config {
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
