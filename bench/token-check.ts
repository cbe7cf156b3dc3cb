/**
 * One session token check's CPU, in this process, with the relay's own parts: the token alone
 * (`SessionTokens.verify`: shape, key id and HMAC through jose, audience, times) the first time a pod sees it and
 * once it is remembered, and the whole check a read makes with a remembered token (that, the binding, and the
 * subject side's stamps, read from the benchmark's Redis at most once a second as a pod does).
 */
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/core/log.js';
import { createRedis, waitReady } from '../src/core/redis/clients.js';
import { SessionCheck } from '../src/identity/session/check.js';
import { SessionTokens } from '../src/identity/session/tokens.js';
import { openKeys } from '../src/stores.js';
import { SessionStore } from '../src/identity/index.js';
import { PAIR } from '../test/helpers/signing.js';

export interface TokenCheckFigures {
  /** SessionTokens.verify of a token this process has not seen: jose's HS256 verification and the claims. */
  firstUs: number;
  /** SessionTokens.verify of a token that passed before: remembered until it expires. */
  tokenUs: number;
  /** SessionCheck.check of a read: the above, the binding, the stamps (cached a second). */
  checkUs: number;
}

/** Tokens verified once each, per batch. */
const FIRST_SIGHTS = 500;

/** Median µs per awaited call over `batches` batches of `perBatch` calls, after one unmeasured batch. */
async function timeAsync(fn: () => Promise<unknown>, perBatch: number, batches = 7): Promise<number> {
  for (let i = 0; i < perBatch; i++) await fn();
  const times: number[] = [];
  for (let b = 0; b < batches; b++) {
    const start = performance.now();
    for (let i = 0; i < perBatch; i++) await fn();
    times.push(((performance.now() - start) * 1000) / perBatch);
  }
  times.sort((x, y) => x - y);
  return Math.round(times[Math.floor(times.length / 2)]! * 10) / 10;
}

export async function tokenCheckFigures(redisUrl: string, sessionKeys: string): Promise<TokenCheckFigures> {
  const config = loadConfig({ REDIS_URL: redisUrl, SESSION_KEYS: sessionKeys, LOG_LEVEL: 'warn' });
  const redis = createRedis(config.redis.topology, 'store');
  try {
    // The store's client fails fast: no command before it is connected.
    await waitReady(redis, 10_000);
    const { keys, ack } = openKeys(config);
    const tokens = new SessionTokens(config.session);
    const check = new SessionCheck(tokens, new SessionStore(redis, keys, ack), 'open');
    const log = createLogger('warn');
    const grant = { sub: PAIR.wkIdentity, kind: 'pair' as const, side: 'wallet' as const, rev: 0, pin: 0 };
    const { token } = await tokens.issue(grant);
    const binding = { kind: 'pair' as const, sub: PAIR.wkIdentity, sides: ['key', 'wallet'] as const };
    if (!(await tokens.verify(token)).ok) throw new Error('the benchmark token does not verify');
    await check.check(token, binding, 'read', 'headers', log);
    // Each first sight needs a token of its own: one unmeasured batch and seven measured.
    const unseen = await Promise.all(Array.from({ length: 8 * FIRST_SIGHTS }, () => tokens.issue(grant)));
    const fresh = new SessionTokens(config.session);
    return {
      firstUs: await timeAsync(() => fresh.verify(unseen.pop()!.token), FIRST_SIGHTS),
      tokenUs: await timeAsync(() => tokens.verify(token), 2000),
      checkUs: await timeAsync(() => check.check(token, binding, 'read', 'headers', log), 2000),
    };
  } finally {
    redis.disconnect();
  }
}
