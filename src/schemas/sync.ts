import { identifier } from './common.js';

/** Lowercase hex of whole bytes: a redeem or witness script. */
const script = { type: 'string', minLength: 2, maxLength: 20_000, pattern: '^(?:[0-9a-f]{2})+$' } as const;

export const syncBody = {
  type: 'object',
  properties: {
    chain: identifier,
    walletIdentity: identifier,
    keyXpub: identifier,
    wkIdentity: identifier,
    generatedAddress: identifier,
    publicNonces: {
      type: 'array',
      maxItems: 1000,
      items: { type: 'string', minLength: 1, maxLength: 500, pattern: '^[A-Za-z0-9_:+/=.-]{1,500}$' },
    },
    // Sent by the key apps released since 2026-01 (wallet recovery, multi-chain sync).
    walletXpub: identifier,
    keyIdentity: identifier,
    redeemScript: script,
    witnessScript: script,
    recoveryXpub: identifier,
    xpubSignature: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9+/]+={0,2}$' },
  },
  required: ['chain', 'walletIdentity', 'keyXpub', 'wkIdentity'],
  additionalProperties: false,
} as const;
