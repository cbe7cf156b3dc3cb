import type { RedisClient } from '../core/redis/clients.js';
import type { Keys } from '../core/redis/keys.js';
import type { Side } from '../core/sides.js';

/** What delivery reads of the receipts: whether `side` acknowledged the record. */
export interface ReceiptReader {
  acknowledged(wkIdentity: string, id: string, side: Side): Promise<boolean>;
}

/** Reads the receipt the first ack stored (`receipts:{M}`, field = record id, value `{"side","at"}`). */
export class RedisReceipts implements ReceiptReader {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {}

  async acknowledged(wkIdentity: string, id: string, side: Side): Promise<boolean> {
    const json = await this.redis.hget(this.keys.receipts(wkIdentity), id);
    if (json === null) return false;
    try {
      return (JSON.parse(json) as { side?: unknown }).side === side;
    } catch {
      // A receipt that is not the relay's JSON acknowledges nothing: the push goes out.
      return false;
    }
  }
}
