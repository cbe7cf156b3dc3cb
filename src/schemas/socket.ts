import { identifier } from './common.js';

/** SPEC §10: the data of a socket's `join` and `leave` events. */
export const roomEvent = {
  type: 'object',
  properties: { wkIdentity: identifier },
  required: ['wkIdentity'],
  additionalProperties: false,
} as const;
