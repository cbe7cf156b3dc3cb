import { readFileSync } from 'node:fs';
import { EVM_CHAINS, type EvmChain } from '../chains.js';
import { ConfigError } from './errors.js';
import type { HostPort } from './parsers.js';
import { AUTH_ROUTES, type AuthRoute } from '../signed-routes.js';
import { CHECKOUT_COMMIT } from '../version.js';
import {
  VARIABLES,
  evmRpcVariable,
  type Runs,
  type Values,
  type Variable,
  type VariableName,
} from './variables.js';

export { ConfigError } from './errors.js';

/*
 * The only reader of process.env: the variables of ./variables.ts, parsed and checked at start-up, shaped into
 * one typed object. The composition (src/config.ts) adds what features parse themselves.
 */

/** The environment, or what a test passes instead. */
export type Source = Record<string, string | undefined>;

export type Role = Values['RELAY_ROLE'];
/** The shape of success answers (docs/api.md#running-in-front-of-the-ssp-apps). */
export type ApiProfile = Values['API_PROFILE'];
export const API_PROFILES: readonly ApiProfile[] = ['standard', 'ssp-apps'];
export type LogLevel = Values['LOG_LEVEL'];
export type LogFormat = Values['LOG_FORMAT'];
export type AuthMode = Values['AUTH_MODE'];
const AUTH_MODES: readonly AuthMode[] = ['off', 'optional', 'required'];
export type RedisNode = HostPort;

/** Whether a process of `role` reads a variable read by `roles`. */
export const runs = (role: Role, roles: readonly Runs[]) => role === 'all' || roles.includes(role);

/** Where Redis is (docs/operations.md#redis-topologies): exactly one of the three topologies. */
export type RedisTopology =
  | {
      kind: 'standalone';
      url: string;
      /** False when no topology was configured: `npm start` may then start a private Redis. */
      explicit: boolean;
      /** REDIS_USERNAME, REDIS_PASSWORD, REDIS_TLS applied to the URL's server (the URL may not name them too). */
      username?: string;
      password?: string;
      tls?: boolean;
    }
  | {
      kind: 'sentinel';
      sentinels: RedisNode[];
      name: string;
      sentinelPassword: string | undefined;
      username: string | undefined;
      password: string | undefined;
      tls: boolean;
    }
  | {
      kind: 'cluster';
      nodes: RedisNode[];
      username: string | undefined;
      password: string | undefined;
      tls: boolean;
    };

/** CONFIG_FILE names a JSON object of VARIABLE: value pairs; the environment wins over it. */
function withConfigFile(source: Source): Source {
  const file = source.CONFIG_FILE?.trim();
  if (!file) return source;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`CONFIG_FILE ${file} could not be read as JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`CONFIG_FILE ${file} must hold a JSON object of VARIABLE: value pairs`);
  }
  const fromFile: Source = {};
  for (const [key, value] of Object.entries(parsed)) {
    fromFile[key] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  return { ...fromFile, ...source };
}

const ENTRIES = Object.entries(VARIABLES) as [VariableName, Variable<unknown>][];

/** The variables' values, and which were set: each parsed, then the exclusions and requirements checked. */
export function readValues(source: Source): { values: Values; set: ReadonlySet<VariableName> } {
  const merged = withConfigFile(source);
  const set = new Set<VariableName>();
  const raw = (name: VariableName) => merged[name]?.trim() || undefined;
  for (const [name] of ENTRIES) if (raw(name) !== undefined) set.add(name);
  for (const [, { exclusive }] of ENTRIES) {
    const chosen = exclusive?.names.filter((name) => set.has(name as VariableName)) ?? [];
    if (chosen.length > 1) throw new ConfigError(`${chosen.join(' and ')} are set: ${exclusive!.why}`);
  }
  const values: Record<string, unknown> = {};
  for (const [name, variable] of ENTRIES) {
    const value = raw(name);
    values[name] = value === undefined ? variable.fallback : variable.parse(value, name, values);
  }
  const role = values.RELAY_ROLE as Role;
  for (const [name, { roles, requiredWhen, requiredWith }] of ENTRIES) {
    if (set.has(name) || !runs(role, roles)) continue;
    if (requiredWith && set.has(requiredWith as VariableName)) {
      throw new ConfigError(`${name} is required with ${requiredWith}`);
    }
    if (requiredWhen && values[requiredWhen[0]] === requiredWhen[1]) {
      throw new ConfigError(`${name} is required when ${requiredWhen[0]}=${requiredWhen[1]}`);
    }
  }
  return { values: values as Values, set };
}

/** Every variable the loader understands, for drift checks of manifests against the code. */
export function knownEnvVars(): string[] {
  return Object.keys(VARIABLES).sort();
}

function redisTopology(v: Values, set: ReadonlySet<VariableName>): RedisTopology {
  const username = v.REDIS_USERNAME;
  const password = v.REDIS_PASSWORD;
  const tls = v.REDIS_TLS === 'true';
  if (v.REDIS_SENTINELS) {
    const { REDIS_SENTINELS: sentinels, REDIS_SENTINEL_NAME: name } = v;
    return {
      kind: 'sentinel',
      sentinels,
      name: name!,
      sentinelPassword: v.REDIS_SENTINEL_PASSWORD,
      username,
      password,
      tls,
    };
  }
  if (v.REDIS_CLUSTER_NODES)
    return { kind: 'cluster', nodes: v.REDIS_CLUSTER_NODES, username, password, tls };
  if (v.REDIS_URL !== undefined) {
    const named = new URL(v.REDIS_URL);
    const twice = (
      [
        ['REDIS_USERNAME', username !== undefined && named.username !== ''],
        ['REDIS_PASSWORD', password !== undefined && named.password !== ''],
      ] as const
    ).find(([, both]) => both);
    if (twice) throw new ConfigError(`${twice[0]} is set and REDIS_URL names one too: keep one of them`);
  }
  return {
    kind: 'standalone',
    url: v.REDIS_URL ?? 'redis://127.0.0.1:6379',
    explicit: set.has('REDIS_URL'),
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(tls ? { tls } : {}),
  };
}

/** `{` and `}` would change the hash tags of the relay's keys (the slots on a cluster): refused on every topology. */
function keyPrefix(prefix: string): string {
  if (/[{}]/.test(prefix)) throw new ConfigError(`KEY_PREFIX may not contain { or } (got "${prefix}")`);
  return prefix;
}

/** AUTH_MODE for every route, then AUTH_ROUTES' `route=mode` pairs over it. */
function authModes(v: Values): Record<AuthRoute, AuthMode> {
  const modes = Object.fromEntries(AUTH_ROUTES.map((route) => [route, v.AUTH_MODE])) as Record<
    AuthRoute,
    AuthMode
  >;
  for (const entry of (v.AUTH_ROUTES ?? '').split(',').filter((e) => e.trim())) {
    const [route, value, extra] = entry.split('=').map((part) => part.trim());
    if (!AUTH_ROUTES.includes(route as AuthRoute) || !AUTH_MODES.includes(value as AuthMode) || extra) {
      throw new ConfigError(
        `AUTH_ROUTES must be route=mode pairs separated by commas, routes ${AUTH_ROUTES.join(', ')}, modes ${AUTH_MODES.join(', ')} (got "${entry.trim()}")`,
      );
    }
    modes[route as AuthRoute] = value as AuthMode;
  }
  if (modes.sync === 'required') {
    throw new ConfigError(
      'AUTH_ROUTES/AUTH_MODE make POST /v1/sync required, but no key app signs its sync: set sync=optional or sync=off in AUTH_ROUTES',
    );
  }
  return modes;
}

/** A comma-separated list; `none` is the empty list (the composition checks each is an action type). */
function unsignedActions(value: string): string[] {
  return value === 'none'
    ? []
    : value
        .split(',')
        .map((type) => type.trim())
        .filter(Boolean);
}

/** The relay's configuration, shaped for its consumers: each value comes from one entry of ./variables.ts. */
function shape(v: Values, set: ReadonlySet<VariableName>) {
  return {
    port: v.PORT,
    host: v.HOST,
    redis: {
      topology: redisTopology(v, set),
      /** A write is acknowledged only once WAIT saw this many replicas take it (0: no WAIT). */
      waitReplicas: v.REDIS_WAIT_REPLICAS,
      waitTimeoutMs: v.REDIS_WAIT_TIMEOUT_MS,
      livenessIntervalMs: v.REDIS_LIVENESS_INTERVAL_MS,
    },
    keyPrefix: keyPrefix(v.KEY_PREFIX),
    role: v.RELAY_ROLE,
    logLevel: v.LOG_LEVEL,
    logFormat: v.LOG_FORMAT,
    logSummarySeconds: v.LOG_SUMMARY_SECONDS,
    shutdownTimeoutMs: v.SHUTDOWN_TIMEOUT_MS,
    requestTimeoutMs: v.HTTP_REQUEST_TIMEOUT_MS,
    httpBacklog: v.HTTP_BACKLOG,
    metricsPort: v.METRICS_PORT,
    commit: v.RELAY_COMMIT ?? CHECKOUT_COMMIT ?? 'unknown',
    sync: { ttlSeconds: v.SYNC_TTL_SECONDS, readGraceSeconds: v.SYNC_READ_GRACE_SECONDS },
    action: { ttlSeconds: v.ACTION_TTL_SECONDS },
    rateLimit: {
      points: v.RATE_LIMIT_POINTS,
      windowSeconds: v.RATE_LIMIT_WINDOW_SECONDS,
      trustProxyHops: v.TRUST_PROXY_HOPS,
    },
    writeBudget: { bytes: v.WRITE_BUDGET_BYTES, windowSeconds: v.WRITE_BUDGET_WINDOW_SECONDS },
    connections: {
      drainTimeoutMs: v.HTTP_DRAIN_TIMEOUT_MS,
      maxInFlight: v.HTTP_MAX_PIPELINED,
      answersPerIp: v.HTTP_ANSWERS_PER_IP,
    },
    apiProfile: v.API_PROFILE,
    corsOrigins:
      v.CORS_ORIGINS === '*'
        ? ('*' as const)
        : v.CORS_ORIGINS.split(',')
            .map((origin) => origin.trim())
            .filter(Boolean),
    services: v.SERVICES,
    support: {
      submissionsPerDay: v.SUBMISSIONS_PER_DAY,
      provider: v.HELPDESK_PROVIDER,
      freshdesk: { url: v.FRESHDESK_URL, apiKey: v.FRESHDESK_API_KEY },
      zendesk: { url: v.ZENDESK_URL, email: v.ZENDESK_EMAIL, apiToken: v.ZENDESK_API_TOKEN },
      webhook: { url: v.HELPDESK_WEBHOOK_URL, secret: v.HELPDESK_WEBHOOK_SECRET },
      /** How the worker delivers support jobs; small values let tests exercise retries and stalls in seconds. */
      delivery: {
        timeoutMs: v.HELPDESK_TIMEOUT_MS,
        retryBaseMs: v.HELPDESK_RETRY_BASE_MS,
        maxAttempts: v.HELPDESK_MAX_ATTEMPTS,
        lockMs: v.HELPDESK_LOCK_MS,
        stalledCheckMs: v.HELPDESK_STALLED_CHECK_MS,
      },
    },
    push: {
      provider: v.PUSH_PROVIDER,
      fcmApiUrl: v.FCM_API_URL,
      timeoutMs: v.PUSH_TIMEOUT_MS,
      retryBaseMs: v.PUSH_RETRY_BASE_MS,
      maxAttempts: v.PUSH_MAX_ATTEMPTS,
      intakeClaimMs: v.PUSH_INTAKE_CLAIM_MS,
    },
    market: {
      refresh: v.MARKET_REFRESH === 'on',
      ratesCryptoUrl: v.RATES_CRYPTO_URL,
      ratesFiatUrl: v.RATES_FIAT_URL,
      ratesRefreshSeconds: v.RATES_REFRESH_SECONDS,
      feesRefreshSeconds: v.FEES_REFRESH_SECONDS,
      feesBtcUrl: v.FEES_BTC_URL,
      feesLtcUrl: v.FEES_LTC_URL,
      evmRpc: Object.fromEntries(EVM_CHAINS.map((chain) => [chain, v[evmRpcVariable(chain)]])) as Record<
        EvmChain,
        string
      >,
      upstreamTimeoutMs: v.UPSTREAM_TIMEOUT_MS,
      priorityFeeFloorGwei: v.EVM_PRIORITY_FEE_FLOOR_GWEI,
      fixedFees: v.FEES_FIXED_SAT_VB,
    },
    sign: { perMinute: v.SIGN_PER_MINUTE, onramperSecret: v.ONRAMPER_SECRET },
    socketsPerIp: v.SOCKETS_PER_IP,
    socketHandshakes: {
      perMinute: v.SOCKET_HANDSHAKES_PER_MINUTE,
      connectTimeoutMs: v.SOCKET_CONNECT_TIMEOUT_MS,
    },
    socketBacklog: { perSocket: v.SOCKET_BACKLOG_BYTES, perPod: v.SOCKET_BACKLOG_POD_BYTES },
    auth: {
      modes: authModes(v),
      windowSeconds: v.AUTH_WINDOW_SECONDS,
      /** 0: no pins are set or enforced. */
      pinDays: v.AUTH_PIN_DAYS,
      pinJoins: v.AUTH_PIN_JOINS === 'true',
      unsignedActions: unsignedActions(v.AUTH_UNSIGNED_ACTIONS),
      signatureVerifier: v.SIGNATURE_VERIFIER,
    },
    socketRoomsMax: v.SOCKET_ROOMS_MAX,
    socketChannelPartitions: v.SOCKET_CHANNEL_PARTITIONS,
    pushPerPairPerMinute: v.PUSH_PER_PAIR_PER_MINUTE,
    tokenRegistrationsPerHour: v.TOKEN_REGISTRATIONS_PER_HOUR,
    tokenRegistrationsPerAddressPerDay: v.TOKEN_REGISTRATIONS_PER_ADDRESS_PER_DAY,
    recoveryPub: {
      ttlSeconds: v.RECOVERYPUB_TTL_DAYS * 86_400,
      creationsPerAddressPerDay: v.RECOVERYPUB_CREATIONS_PER_ADDRESS_PER_DAY,
    },
  };
}

export type Config = ReturnType<typeof shape>;
export type RedisConfig = Config['redis'];
export type SupportConfig = Config['support'];
export type DeliveryConfig = SupportConfig['delivery'];
export type PushConfig = Config['push'];
export type MarketConfig = Config['market'];
export type AuthConfig = Config['auth'];

/** The core configuration read from `source` (the environment, over CONFIG_FILE), and the values behind it. */
export function readConfig(source: Source): { config: Config; values: Values } {
  const { values, set } = readValues(source);
  return { config: shape(values, set), values };
}
