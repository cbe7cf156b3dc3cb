import { identifier } from '../core/validation/common-schema.js';
import { streamPosition } from '../mailbox/index.js';

/** docs/api.md#join-and-leave: the data of a socket's `join` and `leave` events. */
export const roomEvent = {
  type: 'object',
  properties: { wkIdentity: identifier },
  required: ['wkIdentity'],
  additionalProperties: false,
} as const;

/** docs/api.md#resuming-the-stream: a `join` may carry the position the socket resumes from. */
export const joinEvent = {
  ...roomEvent,
  properties: { ...roomEvent.properties, since: streamPosition },
} as const;
