import { identifier } from '../core/validation/common-schema.js';

/** Network is checked as an identifier first (400), then against the supported list (404). */
export const tokenInfoParams = {
  type: 'object',
  properties: {
    network: identifier,
    address: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' },
  },
  required: ['network', 'address'],
  additionalProperties: false,
} as const;
