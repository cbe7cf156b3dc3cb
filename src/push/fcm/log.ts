import type { PushSender } from './types.js';

/** Development only: delivers nowhere; the worker's line per job (type and token count) is all there is. */
export const logSender: PushSender = {
  name: 'log',
  send: () => Promise.resolve({ outcome: 'sent' }),
};
