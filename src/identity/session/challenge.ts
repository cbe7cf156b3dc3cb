import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Side } from '../../core/sides.js';
import type { SessionKey } from '../variables.js';
import type { SubjectKind } from './tokens.js';

/** What a challenge is issued for: its subject, kind and side. */
export interface ChallengeFor {
  subject: string;
  kind: SubjectKind;
  side: Side;
}

const NONCE_BYTES = 16;
const TAG_BYTES = 8;

function tag(secret: Uint8Array, ...parts: string[]): Buffer {
  return createHmac('sha256', secret)
    .update(['session-challenge', ...parts].join('\n'))
    .digest()
    .subarray(0, TAG_BYTES);
}

/**
 * A challenge: 16 random bytes, a tag saying this relay issued them, and one saying for what (both HMACs by the
 * signing key). A challenge that is gone from Redis can so still be told apart: one of another subject, kind or
 * side, or one that expired or never was.
 */
export function newChallenge(signer: SessionKey, issued: ChallengeFor): string {
  const nonce = randomBytes(NONCE_BYTES).toString('hex');
  return nonce + tagsOf(signer.secret, nonce, issued).toString('hex');
}

function tagsOf(secret: Uint8Array, nonce: string, { subject, kind, side }: ChallengeFor): Buffer {
  return Buffer.concat([tag(secret, nonce), tag(secret, nonce, subject, kind, side)]);
}

/** Whether some listed key issued `challenge` (64 hex) for something other than `claimed`. */
export function issuedForOther(
  keys: readonly SessionKey[],
  challenge: string,
  claimed: ChallengeFor,
): boolean {
  const nonce = challenge.slice(0, NONCE_BYTES * 2);
  const tags = Buffer.from(challenge.slice(NONCE_BYTES * 2), 'hex');
  const [issued, forWhat] = [tags.subarray(0, TAG_BYTES), tags.subarray(TAG_BYTES)];
  return keys.some(({ secret }) => {
    const expected = tagsOf(secret, nonce, claimed);
    return (
      timingSafeEqual(expected.subarray(0, TAG_BYTES), issued) &&
      !timingSafeEqual(expected.subarray(TAG_BYTES), forWhat)
    );
  });
}
