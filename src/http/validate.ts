import { Ajv, type ErrorObject, type JSONSchemaType, type Schema } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { AppError, type ErrorDetail } from './errors.js';

// ajv-formats is CommonJS; under nodenext its default export is the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/**
 * The one validation path. Unknown properties are removed (schemas say additionalProperties: false), so they
 * are never stored, and keys like `__proto__` never survive to reach an object's prototype.
 */
// strictRequired would reject the `anyOf: [{ required: [...] }]` idiom that "at least one of" needs.
const ajv = new Ajv({
  allErrors: true,
  removeAdditional: true,
  strict: true,
  strictRequired: false,
  allowUnionTypes: true,
});
addFormats(ajv, ['email']);

/** A string whose content parses as a JSON object (EVM payloads the key app will JSON.parse). */
function isJsonObjectString(data: string): boolean {
  try {
    const parsed: unknown = JSON.parse(data);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
  } catch {
    return false;
  }
}

ajv.addKeyword({
  keyword: 'jsonObjectString',
  type: 'string',
  schemaType: 'boolean',
  errors: false,
  validate: (wanted: boolean, data: string) => !wanted || isJsonObjectString(data),
});

const MAX_DETAILS = 20;

const MESSAGES: Record<Location, string> = {
  body: 'A field of the request body is invalid.',
  params: 'A path parameter is invalid.',
  query: 'A query parameter is invalid.',
  event: 'A field of the socket event is invalid.',
};

/** Where the value came from: a part of an HTTP request, or the data of a socket.io event. */
export type Location = 'body' | 'params' | 'query' | 'event';

function detail(location: Location, error: ErrorObject): ErrorDetail {
  const missing = error.keyword === 'required' ? `/${String(error.params.missingProperty)}` : '';
  return {
    field: `/${location}${error.instancePath}${missing}`,
    message:
      error.keyword === 'jsonObjectString'
        ? 'must be a JSON object encoded as a string'
        : (error.message ?? 'is invalid'),
  };
}

/**
 * Compiles a schema once (call at module load, i.e. start-up) and returns a function that validates a value in
 * place and returns it typed, or throws INVALID_PARAMETER with field-level details.
 */
export function validator<T>(location: Location, schema: JSONSchemaType<T> | Schema): (value: unknown) => T {
  const validate = ajv.compile<T>(schema as Schema);
  return (value) => {
    if (validate(value)) return value;
    const details = (validate.errors ?? []).slice(0, MAX_DETAILS).map((e) => detail(location, e));
    throw new AppError('INVALID_PARAMETER', MESSAGES[location], { details });
  };
}
