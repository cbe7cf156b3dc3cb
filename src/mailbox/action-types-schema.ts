import { SIDES } from '../core/sides.js';
import { identifier } from '../core/validation/common-schema.js';

/** ACTION_TYPES_EXTRA: rows an operator adds to the action-type table (docs/operations.md). */
export const actionTypesExtra = {
  type: 'array',
  maxItems: 1000,
  items: {
    type: 'object',
    properties: {
      type: identifier,
      to: { type: 'string', enum: SIDES },
      replay: { type: 'boolean' },
      push: {
        anyOf: [
          { type: 'null' },
          {
            type: 'object',
            properties: {
              title: { type: 'string', minLength: 1, maxLength: 100 },
              body: { type: 'string', minLength: 1, maxLength: 200 },
            },
            required: ['title', 'body'],
            propertyNames: { enum: ['title', 'body'] },
          },
        ],
      },
    },
    required: ['type', 'to', 'replay', 'push'],
    // The wallet path has no replay.
    if: { properties: { to: { const: 'wallet' } } },
    then: { properties: { replay: { const: false } } },
    // A misspelt field is refused rather than dropped: a silently ignored row would be hard to find.
    propertyNames: { enum: ['type', 'to', 'replay', 'push'] },
  },
} as const;
