import { identifier } from '../../core/validation/common-schema.js';

/** POST /v1/recoverypub: the key app's recovery account xpub and its signature over it. */
export const recoveryPubBody = {
  type: 'object',
  properties: {
    wkIdentity: identifier,
    recoveryXpub: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9]+$' },
    xpubSignature: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9+/]+={0,2}$' },
    chain: identifier,
  },
  required: ['wkIdentity', 'recoveryXpub', 'xpubSignature', 'chain'],
  additionalProperties: false,
} as const;
