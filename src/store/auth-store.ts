import type { Side } from '../action-types.js';
import type { RedisClient } from '../redis/clients.js';
import type { Keys } from './keys.js';
import type { WriteAck } from './write-ack.js';

/**
 * Spent nonces and pins of identity-signed requests, shared by every pod. On the stores' fail-fast client: with
 * Redis away a signed or pinned request is refused with 503 rather than let through unchecked.
 */
export class AuthStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ack: WriteAck,
  ) {}

  /**
   * Spends a nonce until `expiresAtMs` (after which the message is outside the window anyway); false when it
   * was already spent. WAIT-confirmed like every write, so a failover cannot resurrect it; not confirmed, it is
   * released again, since the client is told 503 and may retry.
   */
  async spendNonce(wkIdentity: string, nonce: string, expiresAtMs: number): Promise<boolean> {
    const key = this.keys.authNonce(wkIdentity, nonce);
    const set = await this.redis.set(key, '1', 'PXAT', expiresAtMs, 'NX');
    if (set === null) return false;
    try {
      await this.ack.confirm(key);
    } catch (err) {
      await this.releaseNonce(wkIdentity, nonce);
      throw err;
    }
    return true;
  }

  /** Unspends a nonce whose request failed on the relay's side (5xx), so its honest retry works; best effort. */
  async releaseNonce(wkIdentity: string, nonce: string): Promise<void> {
    await this.redis.del(this.keys.authNonce(wkIdentity, nonce)).catch(() => undefined);
  }

  /** Which of `sides` are pinned (one round trip for both sides of a token registration). */
  async pinned(wkIdentity: string, sides: readonly Side[]): Promise<Side[]> {
    const found = await Promise.all(
      sides.map((side) => this.redis.exists(this.keys.authPin(wkIdentity, side))),
    );
    return sides.filter((_, i) => found[i] === 1);
  }

  /** Pins `sides` of the pair for `days`, renewing the pin of a side that already signs. */
  async pin(wkIdentity: string, sides: readonly Side[], days: number): Promise<void> {
    if (sides.length === 0) return;
    const keys = sides.map((side) => this.keys.authPin(wkIdentity, side));
    await Promise.all(keys.map((key) => this.redis.set(key, '1', 'EX', days * 86_400)));
    await this.ack.confirm(...keys);
  }
}
