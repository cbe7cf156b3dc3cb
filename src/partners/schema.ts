import { MAX_SIGNED_CHARS } from './partners.js';

/**
 * A partner's body after the route refused unknown names: one or more non-empty string values that are safe in
 * a query string (the `queryValue` keyword, see core/validation/validate.ts). Deliberately without a `properties` keyword, so
 * the validator's removeAdditional never reorders or drops what is signed.
 */
export const signBody = {
  type: 'object',
  minProperties: 1,
  patternProperties: {
    '': { type: 'string', minLength: 1, maxLength: MAX_SIGNED_CHARS, queryValue: true },
  },
} as const;
