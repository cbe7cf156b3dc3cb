import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { BUILT_IN_ACTION_TYPES, type ExtraActionType } from '../../mailbox/index.js';
import { AUTH_ROUTES, type AuthRoute } from '../signed-routes.js';
import { EVM_CHAINS, MEMPOOL_FEE_CHAINS, UTXO_CHAINS, type EvmChain } from '../chains.js';
import { AppError } from '../errors.js';
import { validator } from '../validation/validate.js';
import { actionTypesExtra } from '../../mailbox/index.js';

/** The only reader of process.env: one typed, validated object built at start-up. */
/** The shape of success answers (docs/api.md#running-in-front-of-the-ssp-apps). */
export type ApiProfile = 'standard' | 'ssp-apps';
export const API_PROFILES: readonly ApiProfile[] = ['standard', 'ssp-apps'];

export interface Config {
  port: number;
  host: string;
  /** `ssp-apps`: the bare success bodies the released apps read; `standard`: the envelope everywhere. */
  apiProfile: ApiProfile;
  redis: RedisConfig;
  keyPrefix: string;
  role: Role;
  logLevel: LogLevel;
  /** `json` lines for machines (the default), `pretty` one readable line per entry for a developer's terminal. */
  logFormat: LogFormat;
  /** While a failure lasts (an upstream, Redis), one summary line per this period instead of a line each time. */
  logSummarySeconds: number;
  /** How long SIGTERM waits for in-flight requests and the active job before giving up. */
  shutdownTimeoutMs: number;
  /** Longest time a client may take to send a whole request (slow uploads are cut off with 408). */
  requestTimeoutMs: number;
  /**
   * The API listener's accept queue (listen backlog): a reconnect storm queues here until accepted. The kernel
   * caps it at net.core.somaxconn.
   */
  httpBacklog: number;
  /** Port of the Prometheus `/metrics` listener (on HOST, beside the API and the worker); 0 turns it off. */
  metricsPort: number;
  /** The commit the image was built from (RELAY_COMMIT, a build argument), for relay_build_info. */
  commit: string;
  sync: { ttlSeconds: number; readGraceSeconds: number };
  action: { ttlSeconds: number };
  rateLimit: { points: number; windowSeconds: number; trustProxyHops: number };
  /** Bytes of request bodies one client IP may have stored (actions, sync) per window: bounds its Redis use. */
  writeBudget: { bytes: number; windowSeconds: number };
  /** Connections whose responses are not read: how long a written response may wait, and pipelining depth. */
  connections: { drainTimeoutMs: number; maxInFlight: number; answersPerIp: number };
  corsOrigins: '*' | string[];
  services: Record<string, unknown>;
  support: SupportConfig;
  push: PushConfig;
  market: MarketConfig;
  sign: { perMinute: number; onramperSecret: string | undefined };
  /** Open socket.io connections per client IP on one pod (docs/api.md#socket-limits). */
  socketsPerIp: number;
  /**
   * New socket.io sessions per client IP and minute, shared by every pod through Redis; and how long a session
   * may take to connect to a namespace (until then it holds one of the address's SOCKETS_PER_IP).
   */
  socketHandshakes: { perMinute: number; connectTimeoutMs: number };
  /**
   * Bytes of events written to sockets and not yet taken by the kernel, per socket and over the pod: past them
   * the socket that does not read is disconnected (docs/api.md#socket-limits).
   */
  socketBacklog: { perSocket: number; perPod: number };
  auth: AuthConfig;
  /** Pair rooms one socket may be in at once; a join past it disconnects the socket. */
  socketRoomsMax: number;
  /** Pushes per pair and side per minute; past it the action is stored and emitted, its push skipped. */
  pushPerPairPerMinute: number;
  /** `POST /v1/token` registrations per pair and side per hour. */
  tokenRegistrationsPerHour: number;
  /** Token registrations (one per side) per client address per day. */
  tokenRegistrationsPerAddressPerDay: number;
  /** Operator rows merged into the action-type table at start-up (ACTION_TYPES_EXTRA). */
  actionTypesExtra: ExtraActionType[];
}

export type AuthMode = 'off' | 'optional' | 'required';
const AUTH_MODES: readonly AuthMode[] = ['off', 'optional', 'required'];

/** Identity-signed requests (docs/api.md, "Identity-signed requests"). */
export interface AuthConfig {
  modes: Record<AuthRoute, AuthMode>;
  windowSeconds: number;
  /** 0: no pins are set or enforced. */
  pinDays: number;
  /** Whether a pinned side's unsigned joins are refused (apps join unsigned while locked). */
  pinJoins: boolean;
  /** Action types accepted unsigned whatever the mode or pin (sent unsigned on purpose). */
  unsignedActions: string[];
}

export type Role = 'api' | 'worker' | 'all';

export interface RedisNode {
  host: string;
  port: number;
}

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

export interface RedisConfig {
  topology: RedisTopology;
  /** A write is acknowledged only once WAIT saw this many replicas take it (0: no WAIT). */
  waitReplicas: number;
  waitTimeoutMs: number;
  /** The long-lived connections' PING period and answer timeout (docs/operations.md#connection-liveness). */
  livenessIntervalMs: number;
}
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'json' | 'pretty';

export interface SupportConfig {
  submissionsPerDay: number;
  provider: 'freshdesk' | 'zendesk' | 'webhook' | 'log';
  freshdesk: { url: string | undefined; apiKey: string | undefined };
  zendesk: { url: string | undefined; email: string | undefined; apiToken: string | undefined };
  webhook: { url: string | undefined; secret: string | undefined };
  delivery: DeliveryConfig;
}

/** How the worker delivers support jobs; small values let tests exercise retries and stalls in seconds. */
export interface DeliveryConfig {
  timeoutMs: number;
  /** First retry delay; each further attempt doubles it (with jitter). */
  retryBaseMs: number;
  maxAttempts: number;
  /** A job whose worker stops renewing this lock (crash, SIGKILL) is handed to another worker. */
  lockMs: number;
  stalledCheckMs: number;
}

export interface PushConfig {
  provider: 'fcm' | 'log';
  /** Read and checked at start-up of a role that sends pushes (worker, all); absent with `log` and on API pods. */
  serviceAccount: ServiceAccount | undefined;
  fcmApiUrl: string;
  timeoutMs: number;
  /**
   * First retry delay of a job whose tokens failed temporarily; each further attempt doubles it (with jitter).
   * Stored on each job by the worker's intake, like `maxAttempts`.
   */
  retryBaseMs: number;
  maxAttempts: number;
  /** An intent read by a worker that then went away is taken over by another after this long unacknowledged. */
  intakeClaimMs: number;
}

/** The fields of a Google service-account JSON key that FCM HTTP v1 needs. */
export interface ServiceAccount {
  projectId: string;
  clientEmail: string;
  /** PEM; checked to parse as a private key at start-up. */
  privateKey: string;
  tokenUri: string;
}

export interface MarketConfig {
  /** False (MARKET_REFRESH=off): the worker fetches no rates or fees, for a laptop without internet. */
  refresh: boolean;
  ratesCryptoUrl: string;
  ratesFiatUrl: string;
  ratesRefreshSeconds: number;
  feesRefreshSeconds: number;
  feesBtcUrl: string;
  feesLtcUrl: string;
  evmRpc: Record<EvmChain, string>;
  /** Upper bound of every upstream call (connect to last byte), in milliseconds. */
  upstreamTimeoutMs: number;
  /** Lowest priority fee (tip) quoted per EVM chain, in gwei. */
  priorityFeeFloorGwei: Record<EvmChain, number>;
  /** Fees of the chains without a fee API, in sat/vB: every level gets the one value. */
  fixedFees: Record<string, number>;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Source = Record<string, string | undefined>;

const DEFAULT_PRIORITY_FEE_FLOOR_GWEI: Record<EvmChain, number> = {
  eth: 0.1,
  sepolia: 0.1,
  polygon: 30,
  amoy: 30,
  base: 0.001,
  bsc: 0.1,
  avax: 0.001,
};

/** The fixed rates the wallet app itself uses as its floor (Ravencoin's minimum relay fee is 1000 sat/B). */
const DEFAULT_FIXED_FEES: Record<string, number> = {
  btcTestnet: 5,
  btcSignet: 4,
  doge: 1100,
  zec: 30,
  bch: 4,
  flux: 1,
  fluxTestnet: 1,
  rvn: 1050,
};

const DEFAULT_EVM_RPC: Record<EvmChain, string> = {
  eth: 'https://ethereum-rpc.publicnode.com',
  sepolia: 'https://ethereum-sepolia-rpc.publicnode.com',
  polygon: 'https://polygon-bor-rpc.publicnode.com',
  amoy: 'https://polygon-amoy-bor-rpc.publicnode.com',
  base: 'https://base-rpc.publicnode.com',
  bsc: 'https://bsc-rpc.publicnode.com',
  avax: 'https://avalanche-c-chain-rpc.publicnode.com',
};

/** Reads variables by name, remembering every name it was asked for (see knownEnvVars). */
class EnvReader {
  readonly names = new Set<string>();
  constructor(private readonly source: Source) {}

  private raw(name: string): string | undefined {
    this.names.add(name);
    const value = this.source[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  }

  has(name: string): boolean {
    return this.raw(name) !== undefined;
  }

  string(name: string, fallback: string): string {
    return this.raw(name) ?? fallback;
  }

  optional(name: string): string | undefined {
    return this.raw(name);
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
      throw new ConfigError(`${name} must be an integer from ${min} to ${max} (got "${value}")`);
    }
    return Number(value);
  }

  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[]): T {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(value)) {
      throw new ConfigError(`${name} must be one of ${allowed.join(', ')} (got "${value}")`);
    }
    return value as T;
  }

  url(name: string, fallback: string, protocols?: string[]): string;
  url(name: string, fallback: undefined, protocols?: string[]): string | undefined;
  url(name: string, fallback: string | undefined, protocols = ['http:', 'https:']): string | undefined {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      throw new ConfigError(`${name} must be a URL (got an unparseable value)`);
    }
    if (!protocols.includes(parsed.protocol)) {
      throw new ConfigError(`${name} must be a ${protocols.join(' or ')} URL`);
    }
    return value.replace(/\/+$/, '');
  }

  /** `host:port,host:port,…` */
  nodes(name: string): RedisNode[] | undefined {
    const value = this.raw(name);
    if (value === undefined) return undefined;
    return value.split(',').map((entry) => {
      const match = /^\[?([^\s\]]+?)\]?:(\d{1,5})$/.exec(entry.trim());
      if (!match || Number(match[2]) < 1 || Number(match[2]) > 65535) {
        throw new ConfigError(
          `${name} must be a list of host:port separated by commas (got "${entry.trim()}")`,
        );
      }
      return { host: match[1]!, port: Number(match[2]) };
    });
  }

  jsonObject(name: string, fallback: Record<string, unknown>): Record<string, unknown> {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      throw new ConfigError(`${name} must be a JSON object (it is not valid JSON)`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new ConfigError(`${name} must be a JSON object`);
    }
    return parsed as Record<string, unknown>;
  }
}

/** A JSON object of non-negative numbers keyed by names from `allowed`, merged over `fallback`. */
function numberMap<K extends string>(
  env: EnvReader,
  name: string,
  fallback: Record<K, number>,
  allowed: readonly string[],
): Record<K, number> {
  const merged: Record<string, number> = { ...fallback };
  for (const [key, value] of Object.entries(env.jsonObject(name, {}))) {
    if (!allowed.includes(key)) throw new ConfigError(`${name} has an unknown chain "${key}"`);
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new ConfigError(`${name}.${key} must be a non-negative number`);
    }
    merged[key] = value;
  }
  return merged as Record<K, number>;
}

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

const SERVICE_ACCOUNT_VAR = 'FCM_SERVICE_ACCOUNT_FILE';

const parseActionTypesExtra = validator<ExtraActionType[]>('config', actionTypesExtra);

/** ACTION_TYPES_EXTRA: a JSON array of rows, each adding a type; a built-in type may not be changed. */
function readActionTypesExtra(env: EnvReader): ExtraActionType[] {
  const name = 'ACTION_TYPES_EXTRA';
  const value = env.optional(name);
  if (value === undefined) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new ConfigError(`${name} must be a JSON array (it is not valid JSON)`);
  }
  let rows: ExtraActionType[];
  try {
    rows = parseActionTypesExtra(parsed);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    const first = err.details?.[0];
    const where = first ? `${first.field.replace(/^\/config/, '') || '/'} ${first.message}` : 'is invalid';
    throw new ConfigError(
      `${name} must be an array of { type, to: "key"|"wallet", replay, push: { title, body } | null }: ${where}`,
    );
  }
  const builtIn = rows.find((row) => Object.hasOwn(BUILT_IN_ACTION_TYPES, row.type));
  if (builtIn) throw new ConfigError(`${name} may not change the built-in type "${builtIn.type}"`);
  return rows;
}

/** A Google service-account key file, or a ConfigError naming FCM_SERVICE_ACCOUNT_FILE (never its contents). */
function readServiceAccount(file: string): ServiceAccount {
  const bad = (why: string) => new ConfigError(`${SERVICE_ACCOUNT_VAR} ${file} ${why}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw bad(
      err instanceof SyntaxError ? 'is not JSON' : `cannot be read (${(err as NodeJS.ErrnoException).code})`,
    );
  }
  const fields = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  if (fields.type !== 'service_account')
    throw bad('is not a service-account key ("type" is not "service_account")');
  for (const name of ['project_id', 'client_email', 'private_key', 'token_uri']) {
    if (typeof fields[name] !== 'string' || fields[name] === '') throw bad(`has no "${name}"`);
  }
  const account = {
    projectId: fields.project_id as string,
    clientEmail: fields.client_email as string,
    privateKey: fields.private_key as string,
    tokenUri: fields.token_uri as string,
  };
  try {
    createPrivateKey(account.privateKey);
  } catch {
    throw bad('has a "private_key" that is not a PEM private key');
  }
  if (!/^https?:\/\//.test(account.tokenUri)) throw bad('has a "token_uri" that is not an http(s) URL');
  return account;
}

/**
 * Credentials of a third party (FCM, a helpdesk) are needed only where jobs are delivered: a role that delivers
 * refuses to start without them (every job would fail); API pods only queue, so they need none and hold none.
 */
const delivers = (role: Role) => role !== 'api';

function readPush(env: EnvReader, role: Role): PushConfig {
  const provider = env.oneOf('PUSH_PROVIDER', 'log', ['fcm', 'log'] as const);
  const file = env.optional(SERVICE_ACCOUNT_VAR);
  const sends = provider === 'fcm' && delivers(role);
  if (sends && file === undefined) {
    throw new ConfigError(`${SERVICE_ACCOUNT_VAR} is required when PUSH_PROVIDER=fcm`);
  }
  return {
    provider,
    serviceAccount: sends ? readServiceAccount(file!) : undefined,
    fcmApiUrl: env.url('FCM_API_URL', 'https://fcm.googleapis.com'),
    timeoutMs: env.int('PUSH_TIMEOUT_MS', 10_000, 100, 60_000),
    retryBaseMs: env.int('PUSH_RETRY_BASE_MS', 2_000, 10, 600_000),
    maxAttempts: env.int('PUSH_MAX_ATTEMPTS', 8, 1, 100),
    intakeClaimMs: env.int('PUSH_INTAKE_CLAIM_MS', 30_000, 100, 3_600_000),
  };
}

const PROVIDER_NEEDS: Record<SupportConfig['provider'], (support: SupportConfig) => Record<string, unknown>> =
  {
    freshdesk: (s) => ({ FRESHDESK_URL: s.freshdesk.url, FRESHDESK_API_KEY: s.freshdesk.apiKey }),
    zendesk: (s) => ({
      ZENDESK_URL: s.zendesk.url,
      ZENDESK_EMAIL: s.zendesk.email,
      ZENDESK_API_TOKEN: s.zendesk.apiToken,
    }),
    webhook: (s) => ({ HELPDESK_WEBHOOK_URL: s.webhook.url, HELPDESK_WEBHOOK_SECRET: s.webhook.secret }),
    log: () => ({}),
  };

/** A helpdesk chosen without its credentials would fail every job; a role that delivers refuses to start. */
function checkProvider(support: SupportConfig, role: Role): void {
  if (!delivers(role)) return;
  for (const [name, value] of Object.entries(PROVIDER_NEEDS[support.provider](support))) {
    if (value === undefined) {
      throw new ConfigError(`${name} is required when HELPDESK_PROVIDER=${support.provider}`);
    }
  }
}

const TOPOLOGY_VARS = ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'] as const;

function redisTopology(env: EnvReader): RedisTopology {
  const chosen = TOPOLOGY_VARS.filter((name) => env.has(name));
  if (chosen.length > 1) {
    throw new ConfigError(`${chosen.join(' and ')} are set: configure exactly one Redis topology`);
  }
  const username = env.optional('REDIS_USERNAME');
  const password = env.optional('REDIS_PASSWORD');
  const tls = env.oneOf('REDIS_TLS', 'false', ['true', 'false'] as const) === 'true';
  const name = env.optional('REDIS_SENTINEL_NAME');
  const sentinelPassword = env.optional('REDIS_SENTINEL_PASSWORD');
  const sentinels = env.nodes('REDIS_SENTINELS');
  const nodes = env.nodes('REDIS_CLUSTER_NODES');
  const url = env.url('REDIS_URL', undefined, ['redis:', 'rediss:']);
  if (sentinels) {
    if (!name) throw new ConfigError('REDIS_SENTINEL_NAME is required with REDIS_SENTINELS');
    return { kind: 'sentinel', sentinels, name, sentinelPassword, username, password, tls };
  }
  if (nodes) return { kind: 'cluster', nodes, username, password, tls };
  if (url !== undefined) {
    const named = new URL(url);
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
    url: url ?? 'redis://127.0.0.1:6379',
    explicit: url !== undefined,
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(tls ? { tls } : {}),
  };
}

/** `{` and `}` would change the hash tags of the relay's keys (the slots on a cluster): refused on every topology. */
function readKeyPrefix(env: EnvReader): string {
  const prefix = env.string('KEY_PREFIX', 'relay:');
  if (/[{}]/.test(prefix)) throw new ConfigError(`KEY_PREFIX may not contain { or } (got "${prefix}")`);
  return prefix;
}

/** AUTH_MODE for every route, then AUTH_ROUTES' `route=mode` pairs over it. */
function readAuth(env: EnvReader, extraTypes: readonly ExtraActionType[]): AuthConfig {
  const mode = env.oneOf('AUTH_MODE', 'optional', AUTH_MODES);
  const modes = Object.fromEntries(AUTH_ROUTES.map((route) => [route, mode])) as Record<AuthRoute, AuthMode>;
  for (const entry of (env.optional('AUTH_ROUTES') ?? '').split(',').filter((e) => e.trim())) {
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
  const unsigned = env.string('AUTH_UNSIGNED_ACTIONS', 'recoveryrequest');
  const unsignedActions =
    unsigned === 'none'
      ? []
      : unsigned
          .split(',')
          .map((type) => type.trim())
          .filter(Boolean);
  const unknownType = unsignedActions.find(
    (type) => !Object.hasOwn(BUILT_IN_ACTION_TYPES, type) && !extraTypes.some((row) => row.type === type),
  );
  if (unknownType !== undefined) {
    throw new ConfigError(
      `AUTH_UNSIGNED_ACTIONS names "${unknownType}", which is not an action type (built in or in ACTION_TYPES_EXTRA); separate types by commas, or say none`,
    );
  }
  return {
    modes,
    windowSeconds: env.int('AUTH_WINDOW_SECONDS', 600, 1, 86_400),
    pinDays: env.int('AUTH_PIN_DAYS', 0, 0, 3650),
    pinJoins: env.oneOf('AUTH_PIN_JOINS', 'false', ['true', 'false'] as const) === 'true',
    unsignedActions,
  };
}

function read(env: EnvReader): Config {
  const actionTypesExtra = readActionTypesExtra(env);
  const corsOrigins = env.string('CORS_ORIGINS', '*');
  const role = env.oneOf('RELAY_ROLE', 'all', ['api', 'worker', 'all'] as const);
  const evmRpc = {} as Record<EvmChain, string>;
  for (const chain of EVM_CHAINS) {
    evmRpc[chain] = env.url(`EVM_RPC_${chain.toUpperCase()}`, DEFAULT_EVM_RPC[chain]);
  }
  return {
    port: env.int('PORT', 9876, 0, 65535),
    host: env.string('HOST', '0.0.0.0'),
    redis: {
      topology: redisTopology(env),
      waitReplicas: env.int('REDIS_WAIT_REPLICAS', 0, 0, 100),
      // Below the fail-fast command timeout (1500 ms), so the 503 says "not replicated", not "timed out".
      waitTimeoutMs: env.int('REDIS_WAIT_TIMEOUT_MS', 500, 1, 1000),
      // A dead connection is replaced within three intervals: at most 30 s.
      livenessIntervalMs: env.int('REDIS_LIVENESS_INTERVAL_MS', 10_000, 100, 10_000),
    },
    keyPrefix: readKeyPrefix(env),
    role,
    logLevel: env.oneOf('LOG_LEVEL', 'info', ['debug', 'info', 'warn', 'error'] as const),
    logFormat: env.oneOf('LOG_FORMAT', 'json', ['json', 'pretty'] as const),
    logSummarySeconds: env.int('LOG_SUMMARY_SECONDS', 300, 1, 86_400),
    shutdownTimeoutMs: env.int('SHUTDOWN_TIMEOUT_MS', 20_000, 0, 600_000),
    requestTimeoutMs: env.int('HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 600_000),
    httpBacklog: env.int('HTTP_BACKLOG', 4096, 1, 65_535),
    metricsPort: env.int('METRICS_PORT', 9464, 0, 65535),
    commit: env.string('RELAY_COMMIT', 'unknown'),
    sync: {
      ttlSeconds: env.int('SYNC_TTL_SECONDS', 900, 1, 86_400),
      readGraceSeconds: env.int('SYNC_READ_GRACE_SECONDS', 120, 0, 86_400),
    },
    action: { ttlSeconds: env.int('ACTION_TTL_SECONDS', 900, 1, 86_400) },
    rateLimit: {
      points: env.int('RATE_LIMIT_POINTS', 120, 1, 1_000_000),
      windowSeconds: env.int('RATE_LIMIT_WINDOW_SECONDS', 30, 1, 86_400),
      trustProxyHops: env.int('TRUST_PROXY_HOPS', 0, 0, 10),
    },
    writeBudget: {
      // At least one largest action body (2 MiB), or that action could never be written.
      bytes: env.int('WRITE_BUDGET_BYTES', 16 * 1024 * 1024, 2 * 1024 * 1024, 1024 ** 4),
      windowSeconds: env.int('WRITE_BUDGET_WINDOW_SECONDS', 900, 1, 86_400),
    },
    connections: {
      drainTimeoutMs: env.int('HTTP_DRAIN_TIMEOUT_MS', 10_000, 100, 600_000),
      maxInFlight: env.int('HTTP_MAX_PIPELINED', 8, 1, 1000),
      answersPerIp: env.int('HTTP_ANSWERS_PER_IP', 8, 1, 1_000_000),
    },
    apiProfile: env.oneOf('API_PROFILE', 'standard', API_PROFILES),
    corsOrigins:
      corsOrigins === '*'
        ? '*'
        : corsOrigins
            .split(',')
            .map((origin) => origin.trim())
            .filter(Boolean),
    services: env.jsonObject('SERVICES', { onramp: true, offramp: true, swap: true }),
    support: {
      submissionsPerDay: env.int('SUBMISSIONS_PER_DAY', 10, 1, 1_000_000),
      provider: env.oneOf('HELPDESK_PROVIDER', 'log', ['freshdesk', 'zendesk', 'webhook', 'log'] as const),
      freshdesk: { url: env.url('FRESHDESK_URL', undefined), apiKey: env.optional('FRESHDESK_API_KEY') },
      zendesk: {
        url: env.url('ZENDESK_URL', undefined),
        email: env.optional('ZENDESK_EMAIL'),
        apiToken: env.optional('ZENDESK_API_TOKEN'),
      },
      webhook: {
        url: env.url('HELPDESK_WEBHOOK_URL', undefined),
        secret: env.optional('HELPDESK_WEBHOOK_SECRET'),
      },
      delivery: {
        timeoutMs: env.int('HELPDESK_TIMEOUT_MS', 10_000, 100, 120_000),
        retryBaseMs: env.int('HELPDESK_RETRY_BASE_MS', 5_000, 10, 3_600_000),
        maxAttempts: env.int('HELPDESK_MAX_ATTEMPTS', 12, 1, 100),
        lockMs: env.int('HELPDESK_LOCK_MS', 30_000, 500, 600_000),
        stalledCheckMs: env.int('HELPDESK_STALLED_CHECK_MS', 30_000, 100, 600_000),
      },
    },
    push: readPush(env, role),
    market: {
      refresh: env.oneOf('MARKET_REFRESH', 'on', ['on', 'off'] as const) === 'on',
      ratesCryptoUrl: env.url('RATES_CRYPTO_URL', 'https://api.coingecko.com/api/v3'),
      ratesFiatUrl: env.url('RATES_FIAT_URL', 'https://open.er-api.com/v6/latest/USD'),
      ratesRefreshSeconds: env.int('RATES_REFRESH_SECONDS', 300, 1, 86_400),
      feesRefreshSeconds: env.int('FEES_REFRESH_SECONDS', 30, 1, 86_400),
      feesBtcUrl: env.url('FEES_BTC_URL', 'https://mempool.space/api'),
      feesLtcUrl: env.url('FEES_LTC_URL', 'https://litecoinspace.org/api'),
      evmRpc,
      upstreamTimeoutMs: env.int('UPSTREAM_TIMEOUT_MS', 5000, 50, 5000),
      priorityFeeFloorGwei: numberMap(
        env,
        'EVM_PRIORITY_FEE_FLOOR_GWEI',
        DEFAULT_PRIORITY_FEE_FLOOR_GWEI,
        EVM_CHAINS,
      ),
      fixedFees: numberMap(
        env,
        'FEES_FIXED_SAT_VB',
        DEFAULT_FIXED_FEES,
        UTXO_CHAINS.filter((chain) => !MEMPOOL_FEE_CHAINS.includes(chain)),
      ),
    },
    sign: {
      perMinute: env.int('SIGN_PER_MINUTE', 30, 1, 1_000_000),
      onramperSecret: env.optional('ONRAMPER_SECRET'),
    },
    socketsPerIp: env.int('SOCKETS_PER_IP', 50, 1, 1_000_000),
    actionTypesExtra,
    socketHandshakes: {
      perMinute: env.int('SOCKET_HANDSHAKES_PER_MINUTE', 120, 1, 1_000_000),
      connectTimeoutMs: env.int('SOCKET_CONNECT_TIMEOUT_MS', 5000, 500, 45_000),
    },
    socketBacklog: readSocketBacklog(env),
    auth: readAuth(env, actionTypesExtra),
    socketRoomsMax: env.int('SOCKET_ROOMS_MAX', 4, 1, 10_000),
    pushPerPairPerMinute: env.int('PUSH_PER_PAIR_PER_MINUTE', 6, 1, 1_000_000),
    tokenRegistrationsPerHour: env.int('TOKEN_REGISTRATIONS_PER_HOUR', 20, 1, 1_000_000),
    tokenRegistrationsPerAddressPerDay: env.int(
      'TOKEN_REGISTRATIONS_PER_ADDRESS_PER_DAY',
      1000,
      1,
      1_000_000_000,
    ),
  };
}

const MIB = 1024 * 1024;

function readSocketBacklog(env: EnvReader): Config['socketBacklog'] {
  // A socket must be able to hold the largest record (a 2 MiB action body and the fields the relay adds).
  const perSocket = env.int('SOCKET_BACKLOG_BYTES', 4 * MIB, 3 * MIB, 1024 * MIB);
  return { perSocket, perPod: env.int('SOCKET_BACKLOG_POD_BYTES', 128 * MIB, perSocket, 64 * 1024 * MIB) };
}

export function loadConfig(source: Source = process.env): Config {
  const config = read(new EnvReader(withConfigFile(source)));
  checkProvider(config.support, config.role);
  return config;
}

/** Every variable the loader understands, for drift checks of manifests against the code. */
export function knownEnvVars(): string[] {
  const env = new EnvReader({});
  read(env);
  return [...env.names, 'CONFIG_FILE'].sort();
}
