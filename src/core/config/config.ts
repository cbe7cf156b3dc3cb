import { readFileSync } from 'node:fs';
import { ConfigError } from './errors.js';
import type { HostPort } from './parsers.js';
import { CHECKOUT_COMMIT } from '../version.js';
import { type CoreValues, type Runs, type ValuesOf, type VariableTable } from './variables.js';

export { ConfigError } from './errors.js';

/*
 * The only reader of process.env: a table of variables (the kernel's, ./variables.ts, and the features' that
 * src/config.ts composes), parsed and checked at start-up; the kernel's shaped into one typed object.
 */

/** The environment, or what a test passes instead. */
export type Source = Record<string, string | undefined>;

export type Role = CoreValues['RELAY_ROLE'];
/** The shape of success answers (docs/api.md#running-in-front-of-the-ssp-apps). */
export type ApiProfile = CoreValues['API_PROFILE'];
export const API_PROFILES: readonly ApiProfile[] = ['standard', 'ssp-apps'];
export type LogLevel = CoreValues['LOG_LEVEL'];
export type LogFormat = CoreValues['LOG_FORMAT'];
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

/** The values of `variables` (which hold the kernel's), and which were set: each parsed, then the exclusions and requirements checked. */
export function readValues<T extends VariableTable>(
  source: Source,
  variables: T,
): { values: ValuesOf<T>; set: ReadonlySet<string> } {
  const entries = Object.entries(variables);
  const merged = withConfigFile(source);
  const set = new Set<string>();
  const raw = (name: string) => merged[name]?.trim() || undefined;
  for (const [name] of entries) if (raw(name) !== undefined) set.add(name);
  for (const [, { exclusive }] of entries) {
    const chosen = exclusive?.names.filter((name) => set.has(name)) ?? [];
    if (chosen.length > 1) throw new ConfigError(`${chosen.join(' and ')} are set: ${exclusive!.why}`);
  }
  const values: Record<string, unknown> = {};
  for (const [name, variable] of entries) {
    const value = raw(name);
    values[name] = value === undefined ? variable.fallback : variable.parse(value, name, values);
  }
  const role = values.RELAY_ROLE as Role;
  for (const [name, { roles, requiredWhen, requiredWith }] of entries) {
    if (set.has(name) || !runs(role, roles)) continue;
    if (requiredWith && set.has(requiredWith)) {
      throw new ConfigError(`${name} is required with ${requiredWith}`);
    }
    if (requiredWhen && values[requiredWhen[0]] === requiredWhen[1]) {
      throw new ConfigError(`${name} is required when ${requiredWhen[0]}=${requiredWhen[1]}`);
    }
  }
  return { values: values as ValuesOf<T>, set };
}

function redisTopology(v: CoreValues, set: ReadonlySet<string>): RedisTopology {
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

/** The kernel's configuration, shaped for its consumers: each value comes from one entry of ./variables.ts. */
export function coreConfig(v: CoreValues, set: ReadonlySet<string>) {
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
  };
}

export type CoreConfig = ReturnType<typeof coreConfig>;
export type RedisConfig = CoreConfig['redis'];
