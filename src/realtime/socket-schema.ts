import { identifier } from '../core/validation/common-schema.js';

/** docs/api.md#join-and-leave: the data of a socket's `join` and `leave` events. */
export const roomEvent = {
  type: 'object',
  properties: { wkIdentity: identifier },
  required: ['wkIdentity'],
  additionalProperties: false,
} as const;
