import { FcmSender } from './fcm.js';
import { logSender } from './log.js';
import type { PushSettings } from './service-account.js';
import type { PushSender } from './types.js';

export { readServiceAccount, type PushSettings, type ServiceAccount } from './service-account.js';
export type { PushResult, PushSender } from './types.js';

/** The sender named by PUSH_PROVIDER (loadConfig has read and checked the service account for `fcm`). */
export function createPushSender(push: PushSettings): PushSender {
  return push.provider === 'fcm' ? new FcmSender(push.serviceAccount!, push) : logSender;
}
