import type { ApiProfile } from '../../src/core/config/config.js';
import type { Reply } from './api.js';

/**
 * What a relay running `profile` answers (docs/api.md#running-in-front-of-the-ssp-apps): under ssp-apps the reads
 * the released apps make (GET /v1/action/{id}, GET /v1/sync/{id}, …) answer their payload alone, and action
 * records also carry expireAt. Every reply is also checked against the profile's OpenAPI document (api.ts).
 */

/** The body of a success answer to one of those reads. */
export function readBody(profile: ApiProfile, data: unknown): unknown {
  return profile === 'ssp-apps' ? data : { success: true, data };
}

/** The payload of a success answer to one of those reads. */
export function readData(profile: ApiProfile, reply: Reply): Reply['body'] {
  return profile === 'ssp-apps' ? reply.body : reply.body.data;
}

/** An action record as `profile` shapes it: under ssp-apps with expireAt, the same value as expiresAt. */
export function actionRecord<T extends { expiresAt: string }>(profile: ApiProfile, record: T): T {
  return profile === 'ssp-apps' ? { ...record, expireAt: record.expiresAt } : record;
}
