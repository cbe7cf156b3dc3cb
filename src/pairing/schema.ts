import { SOLANA_CHAINS } from '../core/chains.js';
import { identifier } from '../core/validation/common-schema.js';
import { pushToken } from '../push/index.js';

/** Lowercase hex of whole bytes: a redeem or witness script. */
const script = { type: 'string', minLength: 2, maxLength: 20_000, pattern: '^(?:[0-9a-f]{2})+$' } as const;
const nonceHex = { type: 'string', minLength: 1, maxLength: 200, pattern: '^[0-9a-fA-F]+$' } as const;
/** An xpub, or on a Solana chain the key app's 20 leaf keys; which one is decided by `chain` (below). */
const extendedKey = { type: 'string', maxLength: 3000 } as const;
const solanaKeys = { type: 'string', maxLength: 3000, solanaKeyList: true } as const;

/** The record's fields, in the order the record keeps them. */
const recordProperties = {
  chain: identifier,
  walletIdentity: identifier,
  keyXpub: extendedKey,
  wkIdentity: identifier,
  generatedAddress: identifier,
  publicNonces: {
    type: 'array',
    maxItems: 1000,
    items: {
      description: 'a nonce string of [A-Za-z0-9_:+/=.-], or an object { kPublic, kTwoPublic } of hex',
      anyOf: [
        { type: 'string', minLength: 1, maxLength: 500, pattern: '^[A-Za-z0-9_:+/=.-]{1,500}$' },
        {
          type: 'object',
          properties: { kPublic: nonceHex, kTwoPublic: nonceHex },
          required: ['kPublic', 'kTwoPublic'],
          additionalProperties: false,
        },
      ],
    },
  },
  // Sent by the key apps released since 2026-01 (wallet recovery, multi-chain sync).
  walletXpub: extendedKey,
  keyIdentity: identifier,
  redeemScript: script,
  witnessScript: script,
  recoveryXpub: identifier,
  xpubSignature: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9+/]+={0,2}$' },
} as const;

const required = ['chain', 'walletIdentity', 'keyXpub', 'wkIdentity'] as const;

/** keyXpub and walletXpub: the key list on a Solana chain, an identifier on every other. */
const keysByChain = [
  {
    if: { properties: { chain: { enum: SOLANA_CHAINS } }, required: ['chain'] },
    then: { properties: { keyXpub: solanaKeys, walletXpub: solanaKeys } },
    else: { properties: { keyXpub: identifier, walletXpub: identifier } },
  },
] as const;

/** The optional fields; sent as `""` or `null` they count as absent (removed before validation). */
export const SYNC_OPTIONAL_FIELDS = [
  'generatedAddress',
  'publicNonces',
  'walletXpub',
  'keyIdentity',
  'redeemScript',
  'witnessScript',
  'recoveryXpub',
  'xpubSignature',
  'keyToken',
] as const;

export const syncBody = {
  type: 'object',
  properties: {
    ...recordProperties,
    // Registered for the pair's key side as POST /v1/token would, then dropped from the record.
    keyToken: pushToken,
  },
  required,
  allOf: keysByChain,
  additionalProperties: false,
} as const;

/** The stored record: exactly the request's record fields that were given. */
export const syncRecord = {
  type: 'object',
  properties: recordProperties,
  required,
  allOf: keysByChain,
  additionalProperties: false,
} as const;
