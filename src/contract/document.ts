import { credentialProperties, session, sessionChallenge, sessionRevoked } from '../identity/index.js';
import { PURPOSE, type SignedRoute } from '../core/signed-routes.js';
import type { ApiProfile } from '../core/config/config.js';
import { STATUS, type ErrorCode } from '../core/errors.js';
import { koaPath, type RouteSpec } from '../core/http/route-spec.js';
import { RELAY_VERSION } from '../core/version.js';
import { CUSTOM_KEYWORDS } from '../core/validation/validate.js';
import * as responses from './responses-schema.js';
import { asyncApiRead, openApiRead } from './routes.js';

/**
 * The OpenAPI 3.1 document of the HTTP API, built from the very schemas the routes validate with, so it cannot
 * drift from them. Each endpoint is declared once, beside its handler (a RouteSpec, see
 * src/core/http/route-spec.ts), and reaches the document as the app mounts it (src/features.ts). The human contract with the same section names is
 * docs/api.md.
 */

type Schema = Record<string, unknown>;

type Operation = RouteSpec<SignedRoute>;

/** Every request can end in these, before or outside any route (Node's parser, a bug). */
const ANY_REQUEST: ErrorCode[] = [
  'BAD_REQUEST',
  'REQUEST_TIMEOUT',
  'EXPECTATION_FAILED',
  'HEADERS_TOO_LARGE',
  'INTERNAL',
];
/** Every /v1 request: the global rate limit. */
const V1: ErrorCode[] = ['RATE_LIMITED'];
/** Every request with a JSON body. */
const WITH_BODY: ErrorCode[] = [
  'INVALID_JSON',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'INVALID_PARAMETER',
];

/** The writes an app may sign (docs/api.md#identity-signed-requests): the signature's refusals. */
const SIGNABLE: ErrorCode[] = ['AUTH_REQUIRED', 'AUTH_INVALID', 'AUTH_EXPIRED', 'AUTH_REPLAYED'];
/** The routes that accept a session token (docs/api.md#sessions): the token's refusals. */
const BEARER: ErrorCode[] = ['AUTH_REQUIRED', 'AUTH_INVALID', 'AUTH_EXPIRED'];

/**
 * A request body as clients may send it: unknown fields are dropped, never refused, so nothing says
 * `additionalProperties: false`; a signable write also names the four credential fields. A body that refuses
 * unknown fields is documented exactly as validated.
 */
function requestSchema(routes: readonly Operation[], component: string): object {
  const operation = routes.find((route) => route.body?.component === component);
  if (operation?.body === undefined) throw new Error(`no route reads a ${component}`);
  const { schema, emptyAsAbsent = [], exact } = operation.body;
  if (exact) return schema;
  const orAbsent = (field: Schema) => ({
    description: '"" or null count as absent',
    anyOf: [field, { const: '' }, { type: 'null' }],
  });
  const relax = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(relax);
    if (typeof value !== 'object' || value === null) return value;
    const out: Schema = {};
    for (const [key, v] of Object.entries(value)) {
      if (key === 'additionalProperties' && v === false) continue;
      out[key] = relax(v);
      if (key !== 'properties') continue;
      const properties = out[key] as Schema;
      for (const field of emptyAsAbsent) {
        if (properties[field]) properties[field] = orAbsent(properties[field] as Schema);
      }
    }
    return out;
  };
  const relaxed = relax(schema) as Schema & { properties: Schema };
  return {
    ...relaxed,
    description: 'unknown fields are dropped, never stored',
    properties: { ...relaxed.properties, ...(operation.signedAs ? credentialProperties : {}) },
  };
}

/** The components in the document's order; a request body's schema is that of the route that reads it. */
const schemas = (routes: readonly Operation[], profile: ApiProfile): Record<string, object> => ({
  SyncRequest: requestSchema(routes, 'SyncRequest'),
  SyncRecord: responses.syncRecord,
  ActionRequest: requestSchema(routes, 'ActionRequest'),
  ActionRecord: responses.actionRecord(profile),
  ActionStream: responses.actionStream(profile),
  AckRequest: requestSchema(routes, 'AckRequest'),
  Ack: responses.ack,
  RecoveryPubRequest: requestSchema(routes, 'RecoveryPubRequest'),
  RecoveryPub: responses.recoveryPub,
  Presence: responses.presence,
  NoncesStatus: responses.noncesStatus,
  SessionChallengeRequest: requestSchema(routes, 'SessionChallengeRequest'),
  SessionChallenge: sessionChallenge,
  SessionRequest: requestSchema(routes, 'SessionRequest'),
  Session: session,
  SessionRevokeRequest: requestSchema(routes, 'SessionRevokeRequest'),
  SessionRevoked: sessionRevoked,
  TokenRequest: requestSchema(routes, 'TokenRequest'),
  TokenCounts: responses.tokenCounts,
  Rates: responses.rates,
  NetworkFees: responses.networkFees,
  TokenInfo: responses.tokenInfo,
  Services: responses.services,
  SignRequest: requestSchema(routes, 'SignRequest'),
  Signature: responses.signature,
  TicketRequest: requestSchema(routes, 'TicketRequest'),
  ContactRequest: requestSchema(routes, 'ContactRequest'),
  Queued: responses.queued,
  Health: responses.health,
  OpenApiDocument: { type: 'object', description: 'this document' },
  AsyncApiDocument: { type: 'object', description: 'the AsyncAPI 3.0 document of the socket.io events' },
  Error: responses.failure(Object.keys(STATUS) as ErrorCode[]),
});

/** Operations whose answer is the payload itself, without `{ success, data }`, whatever the profile. */
const NOT_ENVELOPED: ReadonlySet<Operation> = new Set([openApiRead, asyncApiRead]);

function isBare(operation: Operation, profile: ApiProfile): boolean {
  return NOT_ENVELOPED.has(operation) || (profile === 'ssp-apps' && operation.bareForApps === true);
}

/** The routes of `routes` answered bare under `profile`, as the router names them (`GET /v1/sync/:id`). */
export function bareRoutes(routes: readonly Operation[], profile: ApiProfile): Set<string> {
  return new Set(
    routes
      .filter((operation) => !NOT_ENVELOPED.has(operation) && isBare(operation, profile))
      .map((operation) => `${operation.method.toUpperCase()} ${koaPath(operation)}`),
  );
}

const HEADERS: Record<string, { description: string; schema: Schema }> = {
  'X-Request-Id': {
    description: 'A sane incoming X-Request-Id (1–128 of [A-Za-z0-9._:-]) echoed, else a new one',
    schema: { type: 'string', minLength: 1, maxLength: 128 },
  },
  'RateLimit-Limit': {
    description: 'Requests allowed per window (RATE_LIMIT_POINTS)',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  'RateLimit-Remaining': {
    description: 'Requests left in this window',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  'RateLimit-Reset': {
    description: 'Seconds until the window resets',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  'Retry-After': {
    description: 'Whole seconds to wait before retrying',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  ETag: {
    description:
      "The record's entity tag, opaque: the same on every pod for the same record, another for another record; a stream read has none",
    schema: { type: 'string', pattern: '^"[\\x21\\x23-\\x7e]*"$' },
  },
  'Cache-Control': {
    description:
      'Always no-cache: an answer kept by a cache must be revalidated (If-None-Match) before each use',
    schema: { type: 'string', const: 'no-cache' },
  },
  'WWW-Authenticate': {
    description:
      'Bearer: the read needs a valid session token (AUTH_READS=required), or the one sent was refused',
    schema: { type: 'string', const: 'Bearer' },
  },
  'X-Content-Type-Options': {
    description: 'Always nosniff: browsers must not read an answer as anything but what it declares',
    schema: { type: 'string', const: 'nosniff' },
  },
};

const RATE_LIMIT_HEADERS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const headerRef = (name: string, required: boolean) =>
  required ? { $ref: `#/components/headers/${name}Required` } : { $ref: `#/components/headers/${name}` };

/** The relay's own ajv keywords mean nothing to other tools: each becomes the sentence it checks. */
function portable(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(portable);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Schema = {};
  const notes: string[] = [];
  for (const [key, value] of Object.entries(schema)) {
    if (Object.hasOwn(CUSTOM_KEYWORDS, key)) notes.push(CUSTOM_KEYWORDS[key]!);
    else out[key] = portable(value);
  }
  if (notes.length > 0) out.description = [out.description, ...notes].filter(Boolean).join('; ');
  return out;
}

function byStatus(codes: ErrorCode[]): Map<number, ErrorCode[]> {
  const grouped = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) grouped.set(STATUS[code], [...(grouped.get(STATUS[code]) ?? []), code]);
  return new Map([...grouped].sort(([a], [b]) => a - b));
}

function headersOf(operation: Operation, status: number, codes: ErrorCode[] = []): Schema {
  const v1 = operation.path.startsWith('/v1/');
  // Node's parser answers (400 BAD_REQUEST, 408, 417, 431) come before the rate limit; so may a 500.
  const answered = status === 200 || status === 304;
  const limited = v1 && (answered || codes.includes('RATE_LIMITED'));
  const headers: Schema = {
    'X-Request-Id': headerRef('X-Request-Id', true),
    'X-Content-Type-Options': headerRef('X-Content-Type-Options', true),
    ...(operation.conditional && answered
      ? {
          // A stream read (the query parameters) has no tag.
          ETag: headerRef('ETag', status === 304 || operation.query === undefined),
          'Cache-Control': headerRef('Cache-Control', true),
        }
      : {}),
  };
  if (v1) for (const name of RATE_LIMIT_HEADERS) headers[name] = headerRef(name, limited);
  if (operation.bearer === 'read' && status === 401)
    headers['WWW-Authenticate'] = headerRef('WWW-Authenticate', true);
  if (codes.includes('RATE_LIMITED')) headers['Retry-After'] = headerRef('Retry-After', true);
  else if (codes.includes('UNAVAILABLE')) headers['Retry-After'] = headerRef('Retry-After', false);
  return headers;
}

function responsesOf(operation: Operation, profile: ApiProfile): Schema {
  const data = operation.query
    ? {
        description: `${operation.data} without the query parameters; ${operation.query.data} with them`,
        anyOf: [ref(operation.data), ref(operation.query.data)],
      }
    : ref(operation.data);
  const out: Schema = {
    200: {
      description: 'Success',
      headers: headersOf(operation, 200),
      content: {
        'application/json': { schema: isBare(operation, profile) ? data : responses.success(data) },
      },
    },
  };
  if (operation.conditional) {
    out[304] = {
      description: `Not Modified: ${NONE_MATCH}; no body`,
      headers: headersOf(operation, 304),
    };
  }
  const codes = [
    ...ANY_REQUEST,
    ...(operation.path.startsWith('/v1/') ? V1 : []),
    ...(operation.body ? WITH_BODY : []),
    ...(operation.signedAs ? SIGNABLE : []),
    ...(operation.bearer ? BEARER : []),
    ...operation.errors,
  ];
  for (const [status, group] of byStatus(codes)) {
    out[status] = {
      description: group.join(', '),
      headers: headersOf(operation, status, group),
      content: {
        'application/json': {
          schema: { ...ref('Error'), properties: { error: { properties: { code: { enum: group } } } } },
        },
      },
    };
  }
  return out;
}

/** When a conditional read answers 304. */
const NONE_MATCH =
  'If-None-Match names the current ETag (weak comparison, a member of a list, or * while a record exists)';

function parametersOf(operation: Operation): Schema[] | undefined {
  const path = Object.entries(operation.params?.properties ?? {}).map(([name, schema]) => ({
    name,
    in: 'path',
    required: true,
    description: 'validated after URL decoding',
    schema: portable(schema),
  }));
  const header = operation.conditional
    ? [
        {
          name: 'If-None-Match',
          in: 'header',
          required: false,
          description: `The ETag of the record the client holds: 304 when ${NONE_MATCH}; a value outside the field's grammar names nothing`,
          schema: { type: 'string' },
        },
      ]
    : [];
  const query = Object.entries(operation.query?.schema.properties ?? {}).map(([name, schema]) => ({
    name,
    in: 'query',
    required: false,
    description: operation.query!.description,
    schema: portable(schema),
  }));
  const all = [...path, ...query, ...header];
  return all.length > 0 ? all : undefined;
}

const QUERY_STRING = {
  type: 'string',
  description:
    'the same parameters as key=value&key=value, in the order to sign (form values are URL-decoded)',
};

function operationObject(operation: Operation, profile: ApiProfile): Schema {
  const limit = operation.body?.limitBytes;
  const queryString = profile === 'ssp-apps' && operation.queryStringForApps === true;
  const parameters = parametersOf(operation);
  return {
    operationId: `${operation.method}${operation.path.replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string = '') => c.toUpperCase())}`,
    summary: operation.summary,
    externalDocs: { url: `docs/api.md#${operation.doc}` },
    ...(parameters ? { parameters } : {}),
    ...(operation.body
      ? {
          requestBody: {
            required: true,
            description:
              `UTF-8 JSON object of at most ${limit} bytes once decoded (Content-Encoding gzip, deflate or br ` +
              'accepted); unknown fields are dropped',
            content: {
              'application/json': { schema: ref(operation.body.component) },
              ...(queryString
                ? {
                    'application/x-www-form-urlencoded': { schema: QUERY_STRING },
                    'text/plain': { schema: QUERY_STRING },
                  }
                : {}),
            },
          },
        }
      : {}),
    ...securityOf(operation),
    responses: responsesOf(operation, profile),
  };
}

/** The one HTTP credential: a session token (docs/api.md#sessions). */
const SECURITY_SCHEMES = {
  sessionToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'A session token of POST /v1/session (HS256, at most 1,024 characters), bound to one pair side or wallet; ' +
      'refused with 401 AUTH_INVALID or AUTH_EXPIRED, never ignored where it is accepted.',
  },
};

const BEARER_SECURITY: Record<'read' | 'write', string> = {
  read: 'a session token of the pair (or, for a pairing record, of the wallet) in Authorization: Bearer; required under AUTH_READS=required, else optional',
  write:
    "a session token of the sender's side in Authorization: Bearer is a credential as a verified identity signature is, and spends no nonce; never beside the signature fields",
};

/**
 * The session token is the only HTTP credential: routes that accept one list it beside `{}` (none), since
 * whether it is required is the operator's choice. A signable write may carry an identity signature, which
 * travels in the JSON body (no OpenAPI security scheme describes body fields): said in words and in
 * `x-identity-signature`.
 */
function securityOf(operation: Operation): Schema {
  const signature = signatureOf(operation);
  if (operation.bearer === undefined) return signature;
  return {
    ...signature,
    security: [{}, { sessionToken: [] }],
    description: [
      ...(operation.signedAs ? [signature.description] : []),
      `Session: ${BEARER_SECURITY[operation.bearer]}.`,
    ].join(' '),
  };
}

function signatureOf(operation: Operation): Schema & { description: string } {
  const route = operation.signedAs;
  if (route === undefined) return { security: [], description: 'Security: none.' };
  const when =
    route === 'recoverypub'
      ? 'always required, whatever AUTH_MODE says'
      : route === 'ack'
        ? 'required whatever AUTH_MODE says, unless AUTH_ROUTES says ack=off'
        : `checked when present; AUTH_MODE / AUTH_ROUTES (${route}=…) decide whether it is required`;
  return {
    security: [],
    description:
      `Security: an identity signature by one of the pair's keys, in the JSON body's signature, message, ` +
      `publicKey and witnessScript fields, signed for the purpose "${PURPOSE[route]}" (${when}).`,
    'x-identity-signature': {
      in: 'body',
      fields: Object.keys(credentialProperties),
      purpose: PURPOSE[route],
      required: route === 'recoverypub' ? 'always' : route === 'ack' ? 'unless ack=off' : 'per AUTH_MODE',
    },
  };
}

/** The header components the operations refer to, each once. */
function headerComponents(paths: Schema): Schema {
  const used = JSON.stringify(paths);
  const out: Schema = {};
  for (const [name, header] of Object.entries(HEADERS)) {
    for (const [component, required] of [
      [name, false],
      [`${name}Required`, true],
    ] as const) {
      if (used.includes(`"#/components/headers/${component}"`)) out[component] = { ...header, required };
    }
  }
  return out;
}

const DESCRIPTION = `The HTTP API of multisig-relay. Every answer is JSON: \`{ "success": true, "data": … }\` or the \
error envelope (\`Error\`); under API_PROFILE=ssp-apps the reads the released apps make answer \`data\` alone. An unknown path answers 404 NOT_FOUND whatever the method; a known path with another \
method answers 405 METHOD_NOT_ALLOWED with an \`Allow\` header (OPTIONS: 204 with \`Allow\`). The socket.io events \
on /v1/socket/key and /v1/socket/wallet are described by GET /v1/asyncapi.json (docs/asyncapi.yaml). The human contract is docs/api.md.`;

/** The action record as the document of `profile` describes it (the AsyncAPI document's event data). */
export function documentedActionRecord(profile: ApiProfile): unknown {
  return portable(responses.actionRecord(profile));
}

/** The whole document of `routes` (in order) under the profile the relay runs: a plain JSON value, built once per process. */
export function buildOpenApi(
  routes: readonly Operation[],
  profile: ApiProfile = 'standard',
): Record<string, unknown> {
  const paths: Record<string, Schema> = {};
  for (const operation of routes) {
    paths[operation.path] = {
      ...paths[operation.path],
      [operation.method]: operationObject(operation, profile),
    };
  }
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'multisig-relay',
      version: RELAY_VERSION,
      description: DESCRIPTION,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: '/', description: 'the relay that serves this document' }],
    paths,
    components: {
      schemas: Object.fromEntries(
        Object.entries(schemas(routes, profile)).map(([name, schema]) => [name, portable(schema)]),
      ),
      headers: headerComponents(paths),
      securitySchemes: SECURITY_SCHEMES,
    },
  };
}
