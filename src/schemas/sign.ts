import { MAX_SIGNED_CHARS } from '../partners.js';

/**
 * A partner's body after the route refused unknown names: one or more string values. Deliberately without a
 * `properties` keyword, so the validator's removeAdditional never reorders or drops what is signed.
 */
export const signBody = {
  type: 'object',
  minProperties: 1,
  patternProperties: { '': { type: 'string', maxLength: MAX_SIGNED_CHARS } },
} as const;
