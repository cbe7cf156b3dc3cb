import type { Side } from '../core/sides.js';
import type { RedisClient } from '../core/redis/clients.js';
import type { Keys } from '../core/redis/keys.js';
import { DELETE_IF_EQUAL, defineScript, readScript } from '../core/redis/scripts.js';
import type { WriteAck } from '../core/redis/write-ack.js';

/**
 * Spent nonces and pins of identity-signed requests, shared by every pod. On the stores' fail-fast client: with
 * Redis away a signed or pinned request is refused with 503 rather than let through unchecked.
 */
const PIN = readScript(new URL('lua/pin-1.lua', import.meta.url));

export class AuthStore {
  private readonly releaseOwn;
  private readonly pinOne;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ack: WriteAck,
  ) {
    this.releaseOwn = defineScript<number>(redis, 'relayNonceRelease', DELETE_IF_EQUAL);
    this.pinOne = defineScript<number>(redis, 'relayAuthPin', PIN);
  }

  /**
   * Spends a nonce for `ttlMs` (until its message can no longer be accepted), remembering `value` (what the
   * request will write, for a resend). Returns undefined when this call spent it, else what the nonce holds.
   * WAIT-confirmed like every write, so a failover cannot resurrect it; a spend that fails on the relay's side
   * (a timeout that may have been applied, a WAIT that saw too few replicas) is given back.
   */
  async spendNonce(
    wkIdentity: string,
    nonce: string,
    ttlMs: number,
    value: string,
  ): Promise<string | undefined> {
    const key = this.keys.authNonce(wkIdentity, nonce);
    try {
      // SET … NX GET (Redis 7): sets and answers nil, or answers what an earlier spend left.
      const earlier = (await this.redis.call('SET', key, value, 'PX', ttlMs, 'NX', 'GET')) as string | null;
      if (earlier !== null) return earlier;
      await this.ack.confirm(key);
    } catch (err) {
      await this.releaseNonce(wkIdentity, nonce, value);
      throw err;
    }
    return undefined;
  }

  /** Unspends a nonce this request spent, so the client's retry works once; best effort. */
  async releaseNonce(wkIdentity: string, nonce: string, value: string): Promise<void> {
    await this.releaseOwn([this.keys.authNonce(wkIdentity, nonce)], [value]).catch(() => undefined);
  }

  /** Which of `sides` are pinned (one round trip for both sides of a token registration). */
  async pinned(wkIdentity: string, sides: readonly Side[]): Promise<Side[]> {
    const found = await Promise.all(
      sides.map((side) => this.redis.exists(this.keys.authPin(wkIdentity, side))),
    );
    return sides.filter((_, i) => found[i] === 1);
  }

  /**
   * Pins `sides` of the pair for `days`, renewing the pin of a side that already signs. A pin holds its creation
   * time in ms (`now`), which a renewal keeps: the stamp a session token issued while pinned is bound to.
   */
  async pin(wkIdentity: string, sides: readonly Side[], days: number, now = Date.now()): Promise<void> {
    if (sides.length === 0) return;
    const keys = sides.map((side) => this.keys.authPin(wkIdentity, side));
    await Promise.all(keys.map((key) => this.pinOne([key], [now, days * 86_400])));
    await this.ack.confirm(...keys);
  }
}
