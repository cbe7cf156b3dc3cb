/** docs/api.md#identifiers: used for ids, chains, identities, xpubs, addresses, action types and networks. */
export const IDENTIFIER_PATTERN = '^[A-Za-z0-9_:-]{1,200}$';

const IDENTIFIER = new RegExp(IDENTIFIER_PATTERN);

/** The identifier check outside a schema (Ajv compiles the pattern of `identifier` itself). */
export const isIdentifier = (value: unknown): value is string =>
  typeof value === 'string' && IDENTIFIER.test(value);

export const identifier = { type: 'string', pattern: IDENTIFIER_PATTERN, maxLength: 200 } as const;

/** A path with one `id` parameter, validated after URL decoding. */
export const idParams = {
  type: 'object',
  properties: { id: identifier },
  required: ['id'],
  additionalProperties: false,
} as const;
