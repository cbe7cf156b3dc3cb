import { identifier } from '../../core/validation/common-schema.js';

export const pushToken = { type: 'string', minLength: 1, maxLength: 5000 } as const;

export const tokenBody = {
  type: 'object',
  properties: { wkIdentity: identifier, keyToken: pushToken, walletToken: pushToken },
  required: ['wkIdentity'],
  allOf: [
    {
      description: 'a body with keyToken, walletToken or both',
      anyOf: [{ required: ['keyToken'] }, { required: ['walletToken'] }],
    },
  ],
  additionalProperties: false,
} as const;
