import { _, Ajv, type ErrorObject, type JSONSchemaType, type KeywordCxt, type Schema } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { AppError, type ErrorDetail } from '../errors.js';

// ajv-formats is CommonJS; under nodenext its default export is the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

const SURROGATE_PAIR = /[\uD800-\uDBFF][\uDC00-\uDFFF]/g;

/** A string's length as JSON Schema counts it, in code points: its UTF-16 length less one per surrogate pair. */
function codePoints(text: string): number {
  return text.length - (text.match(SURROGATE_PAIR)?.length ?? 0);
}

/**
 * maxLength and minLength, counted in code points as ajv does, without ajv's character-by-character count of
 * every string: a string's UTF-16 length bounds its code points from above and at most halves, so most strings
 * are decided by `.length` alone, and the rest by codePoints, whose scan a string without a character outside
 * Latin-1 skips. ajv's own count is most of the time a large payload's validation takes (docs/benchmarks.md).
 */
function addLengthKeywords(instance: Ajv): void {
  for (const keyword of ['maxLength', 'minLength'] as const) {
    instance.removeKeyword(keyword);
    instance.addKeyword({
      keyword,
      type: 'string',
      schemaType: 'number',
      error: {
        message: ({ schemaCode }) =>
          keyword === 'maxLength'
            ? _`"must NOT have more than " + ${schemaCode} + " characters"`
            : _`"must NOT have fewer than " + ${schemaCode} + " characters"`,
        params: ({ schemaCode }) => _`{limit: ${schemaCode}}`,
      },
      code(cxt: KeywordCxt) {
        const { data, schemaCode } = cxt;
        const count = cxt.gen.scopeValue('func', { ref: codePoints });
        cxt.fail(
          keyword === 'maxLength'
            ? _`${data}.length > ${schemaCode} && ${count}(${data}) > ${schemaCode}`
            : _`${data}.length < ${schemaCode} || (${data}.length < 2 * ${schemaCode} && ${count}(${data}) < ${schemaCode})`,
        );
      },
    });
  }
}

/** A string whose content parses as a JSON object (EVM payloads the key app will JSON.parse). */
function isJsonObjectString(data: string): boolean {
  try {
    const parsed: unknown = JSON.parse(data);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
  } catch {
    return false;
  }
}

/**
 * A value signed as part of a `key=value&key=value` string must mean the same thing to the partner's verifier,
 * which parses the widget's query string (Onramper signs "the URL's query string", values as they appear in
 * it). So it may not contain:
 * - `&` or `=`: they would add or split parameters, and signing `wallets=x&redirectAtCheckout=…` would vouch
 *   for a parameter the partner never let us sign; without them the signed string splits back into exactly
 *   the keys and values given, so two different bodies never give the same string;
 * - `%` and `+`: a query parser decodes them (`%26` is `&`, `+` a space), so the raw and the decoded value
 *   would differ and whichever the verifier checks, the other could smuggle a separator;
 * - `#` (ends the query), whitespace, control characters and lone surrogates (not well-formed text: two
 *   different strings would be the same UTF-8 bytes once signed).
 * Real values (`btc:bc1q…,eth:0x…`, `ethereum:0x…`, memo tags) never need any of them.
 */
const QUERY_VALUE = /^[^&=%+#\s\p{Cc}\p{Cs}]*$/u;
const QUERY_VALUE_RULE =
  'must not contain &, =, %, +, #, whitespace, control characters or unpaired surrogates';

function addKeywords(instance: Ajv): void {
  addLengthKeywords(instance);
  instance.addKeyword({
    keyword: 'jsonObjectString',
    type: 'string',
    schemaType: 'boolean',
    errors: false,
    validate: (wanted: boolean, data: string) => !wanted || isJsonObjectString(data),
  });
  instance.addKeyword({
    keyword: 'queryValue',
    type: 'string',
    schemaType: 'boolean',
    errors: false,
    validate: (wanted: boolean, data: string) => !wanted || QUERY_VALUE.test(data),
  });
  instance.addKeyword({
    keyword: 'solanaKeyList',
    type: 'string',
    schemaType: 'boolean',
    errors: false,
    validate: (wanted: boolean, data: string) => !wanted || isSolanaKeyList(data),
  });
}

/**
 * The one validation path. Unknown properties are removed (schemas say additionalProperties: false), so they
 * are never stored, and keys like `__proto__` never survive to reach an object's prototype.
 *
 * Two instances: `decides` stops at a value's first error, so whether a value is valid costs one pass over it
 * at most; `explains` looks for every error, and runs only on a value already refused, against a schema that
 * looks at no more array elements than details can be reported (see firstElements).
 */
function relayAjv(allErrors: boolean): Ajv {
  // strictRequired would reject the `anyOf: [{ required: [...] }]` idiom that "at least one of" needs;
  // strictTuples the tuples firstElements makes.
  const instance = new Ajv({
    allErrors,
    removeAdditional: true,
    strict: true,
    strictRequired: false,
    strictTuples: false,
    allowUnionTypes: true,
    // Errors carry their schema, so a failed `anyOf` can be told in its `description` (see details()).
    verbose: true,
  });
  addFormats(instance, ['email']);
  addKeywords(instance);
  return instance;
}

const decides = relayAjv(false);
const explains = relayAjv(true);

/** The schema keywords whose value is one subschema, a list of them, or a map of names to them. */
const SUBSCHEMA = new Set([
  'items',
  'additionalProperties',
  'additionalItems',
  'contains',
  'if',
  'then',
  'else',
  'not',
]);
const SUBSCHEMA_LISTS = new Set(['anyOf', 'allOf', 'oneOf']);
const SUBSCHEMA_MAPS = new Set(['properties', 'patternProperties']);

/**
 * `schema` with each array's `items` applied to its first `count` elements only (a tuple of `count` copies;
 * the elements after them are not looked at): every error of those elements is at most what `count` details
 * can report, whatever the array's length.
 */
function firstElements(schema: unknown, count: number): unknown {
  if (typeof schema !== 'object' || schema === null) return schema;
  const subschema = (value: unknown) => firstElements(value, count);
  return Object.fromEntries(
    Object.entries(schema).map(([keyword, value]) => {
      if (keyword === 'items' && typeof value === 'object' && !Array.isArray(value))
        return [keyword, Array.from({ length: count }, () => subschema(value))];
      if (SUBSCHEMA.has(keyword)) return [keyword, subschema(value)];
      if (SUBSCHEMA_LISTS.has(keyword)) return [keyword, (value as unknown[]).map(subschema)];
      if (SUBSCHEMA_MAPS.has(keyword))
        return [
          keyword,
          Object.fromEntries(Object.entries(value as object).map(([name, s]) => [name, subschema(s)])),
        ];
      return [keyword, value];
    }),
  );
}

const SOLANA_KEY_COUNT = 20;
const BASE58_KEY = /^[1-9A-HJ-NP-Za-km-z]{32,64}$/;

/** A Solana sync's key list: a JSON array of exactly 20 distinct base58 public keys. */
function isSolanaKeyList(data: string): boolean {
  let keys: unknown;
  try {
    keys = JSON.parse(data);
  } catch {
    return false;
  }
  return (
    Array.isArray(keys) &&
    keys.length === SOLANA_KEY_COUNT &&
    keys.every((key) => typeof key === 'string' && BASE58_KEY.test(key)) &&
    new Set(keys).size === SOLANA_KEY_COUNT
  );
}

/** The relay's own keywords and what each checks (the OpenAPI document turns them into these words). */
export const CUSTOM_KEYWORDS: Readonly<Record<string, string>> = {
  jsonObjectString: 'must be a JSON object encoded as a string',
  queryValue: QUERY_VALUE_RULE,
  solanaKeyList: `must be a JSON array of ${SOLANA_KEY_COUNT} distinct base58 public keys of 32 to 64 characters`,
};

const MAX_DETAILS = 20;

const MESSAGES: Record<Location, string> = {
  body: 'A field of the request body is invalid.',
  params: 'A path parameter is invalid.',
  query: 'A query parameter is invalid.',
  event: 'A field of the socket event is invalid.',
  config: 'A configuration value is invalid.',
};

/** Where the value came from: a part of an HTTP request, the data of a socket.io event, or a JSON variable. */
export type Location = 'body' | 'params' | 'query' | 'event' | 'config';

function detail(location: Location, error: ErrorObject): ErrorDetail {
  const missing = error.keyword === 'required' ? `/${String(error.params.missingProperty)}` : '';
  return {
    field: `/${location}${error.instancePath}${missing}`,
    message: CUSTOM_KEYWORDS[error.keyword] ?? error.message ?? 'is invalid',
  };
}

/** A failed `anyOf` whose schema has a `description`: the one thing to say about its field. */
function describedAnyOf(location: Location, error: ErrorObject): ErrorDetail | undefined {
  const description = (error.parentSchema as { description?: unknown } | undefined)?.description;
  if (error.keyword !== 'anyOf' || typeof description !== 'string') return undefined;
  return { field: detail(location, error).field, message: `must be ${description}` };
}

/**
 * One detail per field and message: allErrors can report the same failure twice (through two branches of an
 * `allOf`), and a failed `if`/`then` adds a `must match "then" schema` line that says nothing the real one does
 * not. A failed `anyOf` lists every branch's complaint and then "must match a schema in anyOf", none of which
 * helps a person: when its schema has a `description`, that field gets one detail from it ("must be a
 * BIP32-style path such as 0-0, or empty"), and neither its branches nor anything else about the field adds one.
 */
function details(location: Location, errors: ErrorObject[]): ErrorDetail[] {
  const described = new Map<string, ErrorDetail>();
  const branches = new Set<string>();
  for (const error of errors) {
    const item = describedAnyOf(location, error);
    if (!item) continue;
    described.set(item.field, item);
    branches.add(`${error.schemaPath}/`);
  }
  const prefixes = [...branches];
  const unique = new Map<string, ErrorDetail>();
  for (const error of errors) {
    if (error.keyword === 'if' || prefixes.some((branch) => error.schemaPath.startsWith(branch))) continue;
    const item = detail(location, error);
    const key = described.has(item.field) ? item.field : `${item.field}\n${item.message}`;
    unique.set(key, described.get(item.field) ?? item);
  }
  return [...unique.values()].slice(0, MAX_DETAILS);
}

/**
 * Compiles a schema once (call at module load, i.e. start-up) and returns a function that validates a value in
 * place and returns it typed, or throws INVALID_PARAMETER with field-level details: the first error first (it
 * may lie past the elements `explains` looks at), then the others `explains` finds, at most MAX_DETAILS.
 */
export function validator<T>(location: Location, schema: JSONSchemaType<T> | Schema): (value: unknown) => T {
  const validate = decides.compile<T>(schema as Schema);
  const explain = explains.compile(firstElements(schema, MAX_DETAILS) as Schema);
  return (value) => {
    if (validate(value)) return value;
    const first = validate.errors ?? [];
    explain(value);
    throw new AppError('INVALID_PARAMETER', MESSAGES[location], {
      details: details(location, [...first, ...(explain.errors ?? [])]),
    });
  };
}
