import { MAX_SIGNED_CHARS } from '../partners.js';

/**
 * A partner's body: one or more of its signable parameters, string values. No `properties` keyword, so the
 * validator's removeAdditional does not silently drop an unknown name: `propertyNames` rejects it instead.
 */
export function signBody(signable: readonly string[]) {
  return {
    type: 'object',
    minProperties: 1,
    propertyNames: { enum: [...signable] },
    patternProperties: { '': { type: 'string', maxLength: MAX_SIGNED_CHARS } },
  } as const;
}
