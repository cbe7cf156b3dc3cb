import { EVM_CHAINS, MEMPOOL_FEE_CHAINS, UTXO_CHAINS, type EvmChain } from '../chains.js';
import { int, jsonObject, nodes, numberMap, oneOf, string, url, type Parser } from './parsers.js';

/** The processes a role runs: `all` runs both. */
export type Runs = 'api' | 'worker';
const API: readonly Runs[] = ['api'];
const WORKER: readonly Runs[] = ['worker'];
const BOTH: readonly Runs[] = ['api', 'worker'];

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

function variable<T>(parse: Parser<T>, fallback: T, meta: Meta): Variable<T> {
  return { parse, fallback, ...meta };
}

function optional<T>(parse: Parser<T>, meta: Meta): Variable<T | undefined> {
  return { parse, fallback: undefined, ...meta };
}

const MIB = 1024 * 1024;
const TOPOLOGY = {
  names: ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'],
  why: 'configure exactly one Redis topology',
} as const;

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

export type EvmRpcVariable = `EVM_RPC_${Uppercase<EvmChain>}`;
export const evmRpcVariable = (chain: EvmChain) => `EVM_RPC_${chain.toUpperCase()}` as EvmRpcVariable;

const EVM_RPC = Object.fromEntries(
  EVM_CHAINS.map((chain, index) => [
    evmRpcVariable(chain),
    variable(url(), DEFAULT_EVM_RPC[chain], {
      roles: BOTH,
      shown: 'public endpoints',
      ...(index === 0 ? { doc: 'JSON-RPC for EVM fees and token metadata' } : {}),
    }),
  ]),
) as Record<EvmRpcVariable, Variable<string>>;

/**
 * Every variable the relay reads, in the order of the README's configuration table (generated from these
 * entries by `npm run docs:config`).
 */
export const VARIABLES = {
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
  ACTION_TYPES_EXTRA: optional(string, {
    roles: BOTH,
    doc: 'JSON array of action types added to the table (docs/api.md#action-types); API pods and workers',
  }),
  RELAY_ROLE: variable(oneOf(['api', 'worker', 'all']), 'all', {
    roles: BOTH,
    doc: '`api`, `worker`, or `all`',
  }),
  SYNC_TTL_SECONDS: variable(int(1, 86_400), 900, { roles: API, doc: 'record lifetimes' }),
  SYNC_READ_GRACE_SECONDS: variable(int(0, 86_400), 120, { roles: API }),
  ACTION_TTL_SECONDS: variable(int(1, 86_400), 900, { roles: BOTH }),
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
  SUBMISSIONS_PER_DAY: variable(int(1, 1_000_000), 10, {
    roles: API,
    doc: 'per-IP budgets of the support forms and of partner signing',
  }),
  SIGN_PER_MINUTE: variable(int(1, 1_000_000), 30, { roles: API }),
  API_PROFILE: variable(oneOf(['standard', 'ssp-apps']), 'standard', {
    roles: API,
    doc: '`ssp-apps`: the bare success answers the released SSP Wallet and SSP Key read ([docs/api.md](docs/api.md#running-in-front-of-the-ssp-apps)); `standard`: the envelope everywhere',
  }),
  CORS_ORIGINS: variable(string, '*', {
    roles: API,
    doc: 'comma-separated allow-list (HTTP and socket.io polling)',
  }),
  SOCKETS_PER_IP: variable(int(1, 1_000_000), 50, {
    roles: API,
    doc: 'open socket.io connections per client IP on one pod; raise it where many users share an IP',
  }),
  SOCKET_HANDSHAKES_PER_MINUTE: variable(int(1, 1_000_000), 120, {
    roles: API,
    doc: 'new socket.io sessions per client IP and minute, shared by all pods (over it: 429)',
  }),
  SOCKET_CONNECT_TIMEOUT_MS: variable(int(500, 45_000), 5000, {
    roles: API,
    doc: 'a session not connected to its namespace by then is closed and frees its `SOCKETS_PER_IP` slot',
  }),
  // A socket must be able to hold the largest record (a 2 MiB action body and the fields the relay adds).
  SOCKET_BACKLOG_BYTES: variable(int(3 * MIB, 1024 * MIB), 4 * MIB, {
    roles: API,
    shown: '`4194304` (4 MiB)',
    doc: 'event bytes a socket that does not read may hold, and all sockets of a pod; past them it is disconnected and reconnects (docs/api.md#socket-limits)',
  }),
  SOCKET_BACKLOG_POD_BYTES: variable(int('SOCKET_BACKLOG_BYTES', 64 * 1024 * MIB), 128 * MIB, {
    roles: API,
    shown: '`134217728` (128 MiB)',
  }),
  AUTH_MODE: variable(oneOf(['off', 'optional', 'required']), 'optional', {
    roles: API,
    doc: 'identity-signed requests: `off`, `optional` (checked when present) or `required` ([docs/api.md](docs/api.md#identity-signed-requests))',
  }),
  AUTH_ROUTES: optional(string, {
    roles: API,
    doc: 'per-route modes over `AUTH_MODE`, e.g. `action=required,token=required,join=optional,sync=off`',
  }),
  AUTH_WINDOW_SECONDS: variable(int(1, 86_400), 600, {
    roles: API,
    doc: "how far a signed message's timestamp may be from the relay's clock",
  }),
  AUTH_PIN_DAYS: variable(int(0, 3650), 0, {
    roles: API,
    doc: 'pins: a side that signed must sign its writes (and joins, if `true`) for that many days; 0: off',
  }),
  AUTH_PIN_JOINS: variable(oneOf(['true', 'false']), 'false', { roles: API }),
  AUTH_UNSIGNED_ACTIONS: variable(string, 'recoveryrequest', {
    roles: API,
    doc: 'action types accepted unsigned whatever the mode or pin (`none` for no exemption); each must be in the action-type table',
  }),
  SOCKET_CHANNEL_PARTITIONS: variable(int(0, 16_384), 0, {
    roles: API,
    doc: "cross-pod events: `0`, a Redis channel per pair room (a pod receives only its rooms' events); N, N hashed channels per path (fewer subscriptions, more events per pod: docs/operations.md#cross-pod-events)",
  }),
  SIGNATURE_VERIFIER: variable(oneOf(['auto', 'libsecp256k1', 'node:crypto']), 'auto', {
    roles: API,
    doc: '`auto`: libsecp256k1 where its native binding loads, else `node:crypto`; or either forced (docs/operations.md#signature-verification)',
  }),
  SOCKET_ROOMS_MAX: variable(int(1, 10_000), 4, {
    roles: API,
    doc: 'pair rooms one socket may be in; a join past it disconnects the socket',
  }),
  PUSH_PER_PAIR_PER_MINUTE: variable(int(1, 1_000_000), 6, {
    roles: API,
    doc: 'pushes per pair and side per minute; past it the action is stored and emitted, the push skipped',
  }),
  TOKEN_REGISTRATIONS_PER_HOUR: variable(int(1, 1_000_000), 20, {
    roles: API,
    doc: '`POST /v1/token` registrations per pair and side per hour',
  }),
  TOKEN_REGISTRATIONS_PER_ADDRESS_PER_DAY: variable(int(1, 1_000_000_000), 1000, {
    roles: API,
    doc: 'token registrations (one per side, `keyToken` of a sync included) per client IP per day',
  }),
  RECOVERYPUB_TTL_DAYS: variable(int(1, 3650), 730, {
    roles: API,
    doc: 'a recovery xpub record (`POST /v1/recoverypub`) lives this many days after its last write or read',
  }),
  RECOVERYPUB_CREATIONS_PER_ADDRESS_PER_DAY: variable(int(1, 1_000_000), 20, {
    roles: API,
    doc: "new recovery xpub records per client IP per day (replacing a pair's own is not one; over it: 429)",
  }),
  SERVICES: variable(
    jsonObject,
    { onramp: true, offramp: true, swap: true },
    {
      roles: API,
      doc: 'JSON object served by `/v1/services`',
    },
  ),
  HELPDESK_PROVIDER: variable(oneOf(['freshdesk', 'zendesk', 'webhook', 'log']), 'log', {
    roles: WORKER,
    doc: '`freshdesk`, `zendesk`, `webhook` or `log` (development: the worker logs ids and sizes only)',
  }),
  FRESHDESK_URL: optional(url(), {
    roles: WORKER,
    requiredWhen: ['HELPDESK_PROVIDER', 'freshdesk'],
    doc: 'Freshdesk (required when it is the provider, on the roles that deliver: worker, all)',
  }),
  FRESHDESK_API_KEY: optional(string, { roles: WORKER, requiredWhen: ['HELPDESK_PROVIDER', 'freshdesk'] }),
  ZENDESK_URL: optional(url(), {
    roles: WORKER,
    requiredWhen: ['HELPDESK_PROVIDER', 'zendesk'],
    doc: 'Zendesk (required when it is the provider)',
  }),
  ZENDESK_EMAIL: optional(string, { roles: WORKER, requiredWhen: ['HELPDESK_PROVIDER', 'zendesk'] }),
  ZENDESK_API_TOKEN: optional(string, { roles: WORKER, requiredWhen: ['HELPDESK_PROVIDER', 'zendesk'] }),
  HELPDESK_WEBHOOK_URL: optional(url(), {
    roles: WORKER,
    requiredWhen: ['HELPDESK_PROVIDER', 'webhook'],
    doc: 'generic JSON webhook, signed with HMAC-SHA256 in `X-Relay-Signature`',
  }),
  HELPDESK_WEBHOOK_SECRET: optional(string, {
    roles: WORKER,
    requiredWhen: ['HELPDESK_PROVIDER', 'webhook'],
  }),
  HELPDESK_TIMEOUT_MS: variable(int(100, 120_000), 10_000, {
    roles: WORKER,
    doc: 'one helpdesk call (worker)',
  }),
  HELPDESK_RETRY_BASE_MS: variable(int(10, 3_600_000), 5_000, {
    roles: API,
    doc: 'exponential backoff base and attempts; stored on each job, so set them on the API pods',
  }),
  HELPDESK_MAX_ATTEMPTS: variable(int(1, 100), 12, { roles: API }),
  HELPDESK_LOCK_MS: variable(int(500, 600_000), 30_000, {
    roles: WORKER,
    doc: "BullMQ job lock and stalled-job check: how soon a crashed worker's job is taken over",
  }),
  HELPDESK_STALLED_CHECK_MS: variable(int(100, 600_000), 30_000, { roles: WORKER }),
  PUSH_PROVIDER: variable(oneOf(['fcm', 'log']), 'log', {
    roles: WORKER,
    doc: '`fcm` or `log` (development: the worker logs the action type and token count, sends nothing)',
  }),
  FCM_SERVICE_ACCOUNT_FILE: optional(string, {
    roles: WORKER,
    requiredWhen: ['PUSH_PROVIDER', 'fcm'],
    doc: 'Google service-account JSON key; required with `fcm`, read and checked when the worker starts',
  }),
  FCM_API_URL: variable(url(), 'https://fcm.googleapis.com', { roles: WORKER, doc: 'FCM HTTP v1 base URL' }),
  PUSH_TIMEOUT_MS: variable(int(100, 60_000), 10_000, {
    roles: WORKER,
    doc: 'one FCM or token-endpoint call (worker)',
  }),
  PUSH_RETRY_BASE_MS: variable(int(10, 600_000), 2_000, {
    roles: WORKER,
    doc: "push retry backoff base and attempts; stored on each job by the worker's intake",
  }),
  PUSH_MAX_ATTEMPTS: variable(int(1, 100), 8, { roles: WORKER }),
  PUSH_INTAKE_CLAIM_MS: variable(int(100, 3_600_000), 30_000, {
    roles: WORKER,
    doc: 'push intents a worker took and never queued (it died) are taken over by another worker after this long',
  }),
  RATES_CRYPTO_URL: variable(url(), 'https://api.coingecko.com/api/v3', {
    roles: WORKER,
    shown: 'CoinGecko',
    doc: 'price providers (CoinGecko-compatible; `{ rates }` per 1 USD)',
  }),
  RATES_FIAT_URL: variable(url(), 'https://open.er-api.com/v6/latest/USD', {
    roles: WORKER,
    shown: 'open.er-api.com',
  }),
  MARKET_REFRESH: variable(oneOf(['on', 'off']), 'on', {
    roles: WORKER,
    doc: '`off`: the worker fetches no rates or fees (a laptop without internet); `/v1/rates` and `/v1/networkfees` answer 503 saying so',
  }),
  RATES_REFRESH_SECONDS: variable(int(1, 86_400), 300, {
    roles: WORKER,
    doc: 'background refresh periods (worker)',
  }),
  FEES_REFRESH_SECONDS: variable(int(1, 86_400), 30, { roles: WORKER }),
  FEES_BTC_URL: variable(url(), 'https://mempool.space/api', {
    roles: WORKER,
    shown: 'mempool.space',
    doc: 'mempool-compatible fee APIs',
  }),
  FEES_LTC_URL: variable(url(), 'https://litecoinspace.org/api', {
    roles: WORKER,
    shown: 'litecoinspace.org',
  }),
  ...EVM_RPC,
  EVM_PRIORITY_FEE_FLOOR_GWEI: variable(
    numberMap(DEFAULT_PRIORITY_FEE_FLOOR_GWEI, EVM_CHAINS),
    DEFAULT_PRIORITY_FEE_FLOOR_GWEI,
    {
      roles: WORKER,
      shown: 'per-chain defaults',
      doc: 'JSON object `{ "eth": 0.05, … }` overriding the priority-fee floors',
    },
  ),
  FEES_FIXED_SAT_VB: variable(
    numberMap(
      DEFAULT_FIXED_FEES,
      UTXO_CHAINS.filter((chain) => !MEMPOOL_FEE_CHAINS.includes(chain)),
    ),
    DEFAULT_FIXED_FEES,
    {
      roles: WORKER,
      shown: 'per-chain defaults',
      doc: 'JSON object of fixed fees for chains without a fee API (doge, zec, bch, flux, rvn, …)',
    },
  ),
  UPSTREAM_TIMEOUT_MS: variable(int(50, 5000), 5000, {
    roles: BOTH,
    doc: 'one upstream call (at most 5000)',
  }),
  ONRAMPER_SECRET: optional(string, {
    roles: API,
    doc: 'HMAC key of the `onramper` partner (unset: `/v1/sign/onramper` answers 503)',
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

export type VariableName = keyof typeof VARIABLES;

/** Each variable's value, typed by its parser (and `undefined` where it has no default). */
export type Values = { [K in VariableName]: (typeof VARIABLES)[K] extends Variable<infer T> ? T : never };
