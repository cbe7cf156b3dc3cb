import { startApi, type ApiHandle } from '../../src/api.js';
import { waitUntilReady } from '../../scripts/stack-parts.js';
import { EVM_CHAINS } from '../../src/core/chains.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/core/log.js';
import { checkContract, servesProfile } from './contract.js';
import { testRedis } from './redis.js';

/** Polls /readyz, as a load balancer would, so tests start against a connected instance. */
export { waitUntilReady };

export interface TestApi {
  url: string;
  config: Config;
  handle: ApiHandle;
  /** Every log line the instance wrote, parsed. */
  logs: Record<string, unknown>[];
  stop(): Promise<void>;
}

const UPSTREAM_URL_VARS = [
  'RATES_CRYPTO_URL',
  'RATES_FIAT_URL',
  'FEES_BTC_URL',
  'FEES_LTC_URL',
  ...EVM_CHAINS.map((chain) => `EVM_RPC_${chain.toUpperCase()}`),
];

/** Environment every test API starts from; a test overrides what it exercises. */
export function testEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    REDIS_URL: testRedis().url,
    PORT: '0',
    HOST: '127.0.0.1',
    RATE_LIMIT_POINTS: '100000',
    SOCKET_HANDSHAKES_PER_MINUTE: '100000',
    LOG_LEVEL: 'debug',
    SHUTDOWN_TIMEOUT_MS: '5000',
    // The metrics tests ask for a listener of their own; others must not collide on the default port.
    METRICS_PORT: '0',
    // No test reaches the internet: providers a test does not fake refuse at once on a closed loopback port.
    ...Object.fromEntries(UPSTREAM_URL_VARS.map((name) => [name, 'http://127.0.0.1:9'])),
    ...overrides,
  };
}

/** A real API instance (real Koa, real HTTP server, real Redis) on a free port. */
export async function startTestApi(overrides: Record<string, string> = {}): Promise<TestApi> {
  const config = loadConfig(testEnv(overrides));
  const logs: Record<string, unknown>[] = [];
  const log = createLogger(config.logLevel, {}, (line) => logs.push(JSON.parse(line)));
  const handle = await startApi(config, log);
  servesProfile(handle.url, config.apiProfile);
  await waitUntilReady(handle.url);
  return { url: handle.url, config, handle, logs, stop: () => handle.stop() };
}

export interface Reply {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests assert on the parsed JSON
  text: string;
}

/**
 * Every HTTP request a test makes to the relay goes through here, and every response is checked against the
 * OpenAPI document (helpers/contract.ts) before the test sees it.
 */
export async function request(base: string, path: string, init: RequestInit = {}): Promise<Reply> {
  const res = await fetch(base + path, init);
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const type = new Headers(init.headers).get('content-type');
  checkContract(base, {
    method: init.method ?? 'GET',
    ...(type !== null && typeof init.body === 'string' ? { request: { type, text: init.body } } : {}),
    target: path,
    status: res.status,
    headers: res.headers,
    text,
  });
  return { status: res.status, headers: res.headers, body, text };
}

export async function get(base: string, path: string, headers: Record<string, string> = {}): Promise<Reply> {
  return request(base, path, { headers });
}

/** POSTs `body` as JSON (a string is sent as is, for broken-JSON tests). */
export async function post(
  base: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  return request(base, path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** The envelope every error carries; `requestId` is checked against the response header. */
export function errorBody(reply: Reply, code: string, message?: string) {
  return {
    success: false,
    error: {
      code,
      message: message ?? reply.body?.error?.message,
      ...(reply.body?.error?.details ? { details: reply.body.error.details } : {}),
      requestId: reply.headers.get('x-request-id'),
    },
  };
}

/**
 * Two API pods on one Redis for the enclosing describe block: started in a before hook with `env()` (read then,
 * so an earlier hook may set up what it names), stopped in an after hook.
 */
export function twoPods(env: () => Record<string, string> = () => ({})): { a: TestApi; b: TestApi } {
  const pods = {} as { a: TestApi; b: TestApi };
  before(async () => {
    [pods.a, pods.b] = await Promise.all([startTestApi(env()), startTestApi(env())]);
  });
  after(() => Promise.all([pods.a?.stop(), pods.b?.stop()]));
  return pods;
}
