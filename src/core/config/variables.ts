import { int, nodes, oneOf, string, url, type Parser } from './parsers.js';

/** The processes a role runs: `all` runs both. */
export type Runs = 'api' | 'worker';
export const API: readonly Runs[] = ['api'];
export const WORKER: readonly Runs[] = ['worker'];
export const BOTH: readonly Runs[] = ['api', 'worker'];

export interface Variable<T> {
  parse: Parser<T>;
  /** The value when the variable is unset or blank. */
  fallback: T;
  /** The processes that read it: a requirement holds only on a role that runs one of them. */
  roles: readonly Runs[];
  /** The README's meaning of the table row this variable opens; absent, it joins the row above. */
  doc?: string;
  /** The default as the README shows it, where the fallback itself is not shown. */
  shown?: string;
  /** Unset is refused while this other variable has this value (worded `is required when NAME=value`). */
  requiredWhen?: readonly [string, string];
  /** Unset is refused while this other variable is set (worded `is required with NAME`). */
  requiredWith?: string;
  /** Variables of which at most one may be set; `why` ends the refusal's message. */
  exclusive?: { names: readonly string[]; why: string };
}

type Meta = Omit<Variable<unknown>, 'parse' | 'fallback'>;

export function variable<T>(parse: Parser<T>, fallback: T, meta: Meta): Variable<T> {
  return { parse, fallback, ...meta };
}

export function optional<T>(parse: Parser<T>, meta: Meta): Variable<T | undefined> {
  return { parse, fallback: undefined, ...meta };
}

export const MIB = 1024 * 1024;
const TOPOLOGY = {
  names: ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'],
  why: 'configure exactly one Redis topology',
} as const;

/**
 * The kernel's own variables; each feature declares its own in `src/<feature>/variables.ts`, and src/config.ts
 * composes the union (the README's configuration table is generated from it by `npm run docs:config`).
 */
export const CORE_VARIABLES = {
  PORT: variable(int(0, 65535), 9876, { roles: API, doc: 'API listener' }),
  HOST: variable(string, '0.0.0.0', { roles: API }),
  REDIS_URL: optional(url(['redis:', 'rediss:']), {
    roles: BOTH,
    shown: '—',
    exclusive: TOPOLOGY,
    doc: 'a single Redis every pod and the worker share (`maxmemory-policy noeviction`); `rediss://` for TLS. Unset (and no other topology): `npm start` runs a private redis-server, `npm run jobs` and `migrate-keys` use `redis://127.0.0.1:6379`',
  }),
  REDIS_SENTINELS: optional(nodes, {
    roles: BOTH,
    exclusive: TOPOLOGY,
    doc: "Redis Sentinel instead: `host:port,…` of the sentinels and the master's name",
  }),
  REDIS_SENTINEL_NAME: optional(string, { roles: BOTH, requiredWith: 'REDIS_SENTINELS' }),
  REDIS_SENTINEL_PASSWORD: optional(string, { roles: BOTH }),
  REDIS_CLUSTER_NODES: optional(nodes, {
    roles: BOTH,
    exclusive: TOPOLOGY,
    doc: 'Redis Cluster instead: `host:port,…` seed nodes (exactly one of the three topologies)',
  }),
  REDIS_USERNAME: optional(string, {
    roles: BOTH,
    doc: 'ACL user, password and TLS of the Redis nodes (with `REDIS_URL`: instead of naming them in the URL)',
  }),
  REDIS_PASSWORD: optional(string, { roles: BOTH }),
  REDIS_TLS: variable(oneOf(['true', 'false']), 'false', { roles: BOTH }),
  REDIS_WAIT_REPLICAS: variable(int(0, 100), 0, {
    roles: BOTH,
    doc: 'writes answer 200 only once `WAIT` saw this many replicas take them, else 503 (docs/operations.md)',
  }),
  // Below the fail-fast command timeout (1500 ms), so the 503 says "not replicated", not "timed out".
  REDIS_WAIT_TIMEOUT_MS: variable(int(1, 1000), 500, { roles: BOTH }),
  // A dead connection is replaced within three intervals: at most 30 s.
  REDIS_LIVENESS_INTERVAL_MS: variable(int(100, 10_000), 10_000, {
    roles: BOTH,
    doc: 'PING period (and answer timeout) of the long-lived connections: a silent one is replaced within three periods (docs/operations.md#connection-liveness)',
  }),
  KEY_PREFIX: variable(string, 'relay:', {
    roles: BOTH,
    doc: "prefix of the relay's keys and queues: deployments sharing one Redis need different ones; no `{` or `}`",
  }),
  RELAY_ROLE: variable(oneOf(['api', 'worker', 'all']), 'all', {
    roles: BOTH,
    doc: '`api`, `worker`, or `all`',
  }),
  RATE_LIMIT_POINTS: variable(int(1, 1_000_000), 120, {
    roles: API,
    doc: 'global per-IP budget on `/v1`, shared by all pods (an IPv6 client counts by its /64)',
  }),
  RATE_LIMIT_WINDOW_SECONDS: variable(int(1, 86_400), 30, { roles: API }),
  // At least one largest action body (2 MiB), or that action could never be written.
  WRITE_BUDGET_BYTES: variable(int(2 * MIB, 1024 ** 4), 16 * MIB, {
    roles: API,
    shown: '`16777216` (16 MiB)',
    doc: 'per-IP bytes of `POST /v1/action`, `/v1/sync` and `/v1/token` bodies per window (operations)',
  }),
  WRITE_BUDGET_WINDOW_SECONDS: variable(int(1, 86_400), 900, { roles: API }),
  TRUST_PROXY_HOPS: variable(int(0, 10), 0, {
    roles: API,
    doc: "how many proxies' `X-Forwarded-For` entries to trust (0: use the socket address)",
  }),
  API_PROFILE: variable(oneOf(['standard', 'ssp-apps']), 'standard', {
    roles: API,
    doc: '`ssp-apps`: the bare success answers the released SSP Wallet and SSP Key read ([docs/api.md](docs/api.md#running-in-front-of-the-ssp-apps)); `standard`: the envelope everywhere',
  }),
  CORS_ORIGINS: variable(string, '*', {
    roles: API,
    doc: 'comma-separated allow-list (HTTP and socket.io polling)',
  }),
  METRICS_PORT: variable(int(0, 65535), 9464, {
    roles: BOTH,
    doc: 'Prometheus `/metrics` (and `/healthz`) listener; `0` turns it off',
  }),
  RELAY_COMMIT: optional(string, {
    roles: BOTH,
    doc: 'the commit of this build, for the `relay_build_info` metric; the image sets it from its build argument. Unset: `git rev-parse HEAD` of the checkout the relay runs from, else `unknown`',
  }),
  LOG_LEVEL: variable(oneOf(['debug', 'info', 'warn', 'error']), 'info', {
    roles: BOTH,
    doc: '`debug`, `info`, `warn`, `error`; JSON lines on stdout',
  }),
  LOG_FORMAT: variable(oneOf(['json', 'pretty']), 'json', {
    roles: BOTH,
    doc: '`json` lines, or `pretty` (one readable line per entry: time, level, message, `key=value` fields) for a terminal',
  }),
  LOG_SUMMARY_SECONDS: variable(int(1, 86_400), 300, {
    roles: BOTH,
    doc: 'a lasting failure (upstream, Redis) is logged when it starts and ends, and summarized this often',
  }),
  SHUTDOWN_TIMEOUT_MS: variable(int(0, 600_000), 20_000, {
    roles: BOTH,
    doc: 'how long SIGTERM waits for in-flight requests and active jobs',
  }),
  HTTP_REQUEST_TIMEOUT_MS: variable(int(100, 600_000), 30_000, {
    roles: API,
    doc: 'longest time a client may take to send a whole request',
  }),
  HTTP_DRAIN_TIMEOUT_MS: variable(int(100, 600_000), 10_000, {
    roles: API,
    doc: 'a response the client does not take within this closes its connection',
  }),
  HTTP_MAX_PIPELINED: variable(int(1, 1000), 8, {
    roles: API,
    doc: 'requests one connection may have waiting (pipelining); more closes it',
  }),
  HTTP_ANSWERS_PER_IP: variable(int(1, 1_000_000), 8, {
    roles: API,
    doc: 'reads (GET, HEAD, OPTIONS) of one client IP in progress at once on one pod, over all its connections, and as many other requests; more wait',
  }),
  HTTP_BACKLOG: variable(int(1, 65_535), 4096, {
    roles: API,
    doc: "the API listener's accept queue (capped by the kernel's `net.core.somaxconn`); see docs/operations.md",
  }),
  /** Read before the others, to fill in what the environment leaves unset. */
  CONFIG_FILE: optional(string, { roles: BOTH, doc: 'optional JSON object of `VARIABLE: value` defaults' }),
};

/** A table of variables, keyed by name. */
export type VariableTable = Record<string, Variable<unknown>>;

/** Each variable's value, typed by its parser (and `undefined` where it has no default). */
export type ValuesOf<T> = { [K in keyof T]: T[K] extends Variable<infer V> ? V : never };

export type CoreValues = ValuesOf<typeof CORE_VARIABLES>;
