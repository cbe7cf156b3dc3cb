import { identifier } from './common.js';

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
  },
  required: ['chain', 'walletIdentity', 'keyXpub', 'wkIdentity'],
  additionalProperties: false,
} as const;
