import { SIDES } from '../core/sides.js';
import { identifier } from '../core/validation/common-schema.js';
import { REPLAY_SIDE } from './table.js';

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
    // Only REPLAY_SIDE's path replays.
    if: { properties: { to: { enum: SIDES.filter((side) => side !== REPLAY_SIDE) } } },
    then: { properties: { replay: { const: false } } },
    // A misspelt field is refused rather than dropped: a silently ignored row would be hard to find.
    propertyNames: { enum: ['type', 'to', 'replay', 'push'] },
  },
} as const;
