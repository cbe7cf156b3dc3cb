import { createHash } from 'node:crypto';

import type { Side } from '../sides.js';

/**
 * The relay's key layout (docs/operations.md#key-layout-and-redis-cli-recipes), in one place so operators and
 * code agree. It is the same on every topology. Keys that one script touches share a hash tag (`{…}`), so on a
 * Redis Cluster they live in one slot: a pair's token and tombstone sets are tagged with its identity, and so are
 * its nonces, pins and push counters (one pair's keys on one node); a token's move epoch with its owner entry's
 * name. Every other operation touches one key.
 */
export interface Keys {
  sync(walletIdentity: string): string;
  action(wkIdentity: string): string;
  /** Marks the pair's mailbox as written by a verified (signed) write; tagged with the mailbox's name, so in its slot. */
  actionVerified(wkIdentity: string): string;
  /** The pair's retained records of one direction, with their offsets; tagged with the mailbox's name, so in its slot. */
  stream(wkIdentity: string, side: Side): string;
  /** A direction's position: its epoch, last offset and retained bytes; in the mailbox's slot too. */
  streamMeta(wkIdentity: string, side: Side): string;
  /** Record id → the first ack's `{"side","at"}` JSON; in the mailbox's slot. */
  receipts(wkIdentity: string): string;
  /** A side's sockets in the pair's room: per pod joined (`j:<pod>`) and ack-capable (`a:<pod>`), and `lastSeen`. */
  presence(wkIdentity: string, side: Side): string;
  /** Exists while the pod is alive: only then do its presence counts count. */
  pod(podId: string): string;
  /** The pair's registered tokens of one side: a sorted set scored by registration time. */
  tokens(wkIdentity: string, side: Side): string;
  /** Tokens that moved away from the pair, scored by the move's epoch (kept an hour; see TokenStore). */
  tokensGone(wkIdentity: string, side: Side): string;
  /** Token → owning pair, keyed by the token's SHA-1: the one pair a token is delivered to. */
  tokenOwner(side: Side, token: string): string;
  /** The token's latest move epoch, in its owner entry's slot (its hash tag is the owner entry's name). */
  tokenEpoch(side: Side, token: string): string;
  rates: string;
  fees: string;
  tokenInfo(network: string, address: string): string;
  /** Marks a support job id as counted against a submission budget (one day, the job's dedupe window). */
  supportCounted(jobId: string): string;
  /** A spent nonce of an identity-signed request, kept until its message can no longer be accepted. */
  authNonce(wkIdentity: string, nonce: string): string;
  /** A side of the pair that signs its writes: its unsigned writes are refused while this exists. */
  authPin(wkIdentity: string, side: Side): string;
  /** A session challenge issued for `subject` (a wkIdentity or walletIdentity): the kind and side it is for, or `used`. */
  sessionChallenge(subject: string, challenge: string): string;
  /** A subject side's session revocation stamp (ms): tokens issued before it are refused. In the slot of its pins. */
  sessionRevocation(subject: string, side: Side): string;
  /** The key app's recovery xpub of a pair, kept RECOVERYPUB_TTL_DAYS after its last write or read. */
  recoveryPub(wkIdentity: string): string;
  /** Pushes sent to one side of the pair in the current minute. */
  pushCount(wkIdentity: string, side: Side): string;
  /** The count a push job got on its first run, so that its re-runs are not counted again. */
  pushCounted(wkIdentity: string, side: Side, jobId: string): string;
  /** The stream of push intents the action route appends to and the worker's intake reads (push/jobs.ts). */
  pushIntents: string;
  /**
   * The sharded pub/sub channel of a pair room's events on one path (`room`: the pair's identity, or a partition's
   * name), tagged with it so that rooms spread over a cluster's masters.
   */
  roomChannel(side: Side, room: string): string;
  /** The marker a write confirmation writes before its WAIT (write-ack.ts), in the slot of `key`. */
  confirmMarker(key: string): string;
}

const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');

export function keysFor(prefix: string): Keys {
  return {
    sync: (id) => `${prefix}sync:${id}`,
    action: (id) => `${prefix}action:${id}`,
    actionVerified: (id) => `${prefix}action:verified:{${prefix}action:${id}}`,
    stream: (id, side) => `${prefix}stream:${side}:{${prefix}action:${id}}`,
    streamMeta: (id, side) => `${prefix}streammeta:${side}:{${prefix}action:${id}}`,
    receipts: (id) => `${prefix}receipts:{${prefix}action:${id}}`,
    presence: (id, side) => `${prefix}presence:${side}:{${prefix}action:${id}}`,
    pod: (podId) => `${prefix}pod:${podId}`,
    tokens: (id, side) => `${prefix}tokens:${side}:{${id}}`,
    tokensGone: (id, side) => `${prefix}tokens:gone:${side}:{${id}}`,
    tokenOwner: (side, token) => `${prefix}tokens:owner:${side}:${sha1(token)}`,
    tokenEpoch: (side, token) => `${prefix}tokens:epoch:{${prefix}tokens:owner:${side}:${sha1(token)}}`,
    rates: `${prefix}rates`,
    fees: `${prefix}fees`,
    tokenInfo: (network, address) => `${prefix}tokeninfo:${network}:${address}`,
    roomChannel: (side, room) => `${prefix}socket:${side}:{${room}}`,
    supportCounted: (jobId) => `${prefix}support:counted:${jobId}`,
    authNonce: (id, nonce) => `${prefix}authnonce:{${id}}:${nonce}`,
    authPin: (id, side) => `${prefix}authpin:{${id}}:${side}`,
    sessionChallenge: (id, challenge) => `${prefix}session:challenge:{${id}}:${challenge}`,
    sessionRevocation: (id, side) => `${prefix}session:rev:{${id}}:${side}`,
    recoveryPub: (id) => `${prefix}recoverypub:{${id}}`,
    pushCount: (id, side) => `${prefix}pushrate:{${id}}:${side}`,
    pushCounted: (id, side, jobId) => `${prefix}pushrate:{${id}}:${side}:job:${jobId}`,
    pushIntents: `${prefix}push:intents`,
    confirmMarker: (key) => `${prefix}ack:{${hashedPart(key)}}`,
  };
}

/**
 * What Redis Cluster hashes: the first non-empty `{…}` of the key, else the whole key. It never contains `}` for
 * the relay's keys (KEY_PREFIX may hold no brace and identities none either), so `{hashedPart}` tags the same slot.
 */
function hashedPart(key: string): string {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

/** The Redis Cluster slot of `key`: CRC16 (XMODEM) of its hashed part, modulo 16384. */
export function slotOf(key: string): number {
  let crc = 0;
  for (const byte of Buffer.from(hashedPart(key))) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16_384;
}
