import { randomFillSync } from 'node:crypto';

const ID_BYTES = 16;
const POOL_IDS = 256;
const pool = Buffer.alloc(ID_BYTES * POOL_IDS);
let next = POOL_IDS;

/**
 * The id a verified write goes by, and an action record's: 128 random bits as 22 base64url characters, so two POSTs in one millisecond are still
 * two records. The bits come from a pool refilled 256 ids at a time, as Node does for randomUUID: a call into
 * the system's random source per id is a visible share of every POST (docs/benchmarks.md).
 */
export function newRecordId(): string {
  if (next === POOL_IDS) {
    randomFillSync(pool);
    next = 0;
  }
  const start = next++ * ID_BYTES;
  return pool.toString('base64url', start, start + ID_BYTES);
}
