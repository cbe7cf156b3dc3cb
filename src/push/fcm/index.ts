import type { PushConfig } from '../../core/config/config.js';
import { FcmSender } from './fcm.js';
import { logSender } from './log.js';
import type { PushSender } from './types.js';

export type { PushResult, PushSender } from './types.js';

/** The sender named by PUSH_PROVIDER (loadConfig has read and checked the service account for `fcm`). */
export function createPushSender(push: PushConfig): PushSender {
  return push.provider === 'fcm' ? new FcmSender(push.serviceAccount!, push) : logSender;
}
