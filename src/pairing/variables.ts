import { int } from '../core/config/parsers.js';
import { API, variable, type ValuesOf } from '../core/config/variables.js';

/** The pairing's variables: the sync record and the recovery xpub record. */
export const PAIRING_VARIABLES = {
  SYNC_TTL_SECONDS: variable(int(1, 86_400), 900, {
    roles: API,
    doc: 'sync record lifetime, and what is left of it after its first read (0: deleted on read)',
  }),
  SYNC_READ_GRACE_SECONDS: variable(int(0, 86_400), 120, { roles: API }),
  RECOVERYPUB_TTL_DAYS: variable(int(1, 3650), 730, {
    roles: API,
    doc: 'a recovery xpub record (`POST /v1/recoverypub`) lives this many days after its last write or read',
  }),
  RECOVERYPUB_CREATIONS_PER_ADDRESS_PER_DAY: variable(int(1, 1_000_000), 20, {
    roles: API,
    doc: "new recovery xpub records per client IP per day (replacing a pair's own is not one; over it: 429)",
  }),
};

export function pairingSettings(v: ValuesOf<typeof PAIRING_VARIABLES>) {
  return {
    sync: { ttlSeconds: v.SYNC_TTL_SECONDS, readGraceSeconds: v.SYNC_READ_GRACE_SECONDS },
    recoveryPub: {
      ttlSeconds: v.RECOVERYPUB_TTL_DAYS * 86_400,
      creationsPerAddressPerDay: v.RECOVERYPUB_CREATIONS_PER_ADDRESS_PER_DAY,
    },
  };
}
export type PairingConfig = ReturnType<typeof pairingSettings>;
