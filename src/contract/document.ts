import {
  ACTION_BODY_LIMIT,
  DEFAULT_BODY_LIMIT,
  SIGN_BODY_LIMIT,
  SUPPORT_BODY_LIMIT,
  SYNC_BODY_LIMIT,
} from '../core/http/body.js';
import { PURPOSE, type SignedRoute } from '../core/signed-routes.js';
import type { ApiProfile } from '../core/config/config.js';
import { STATUS, type ErrorCode } from '../core/errors.js';
import { RELAY_VERSION } from '../core/version.js';
import { CUSTOM_KEYWORDS } from '../core/validation/validate.js';
import { actionBody } from '../mailbox/index.js';
import { idParams } from '../core/validation/common-schema.js';
import { credentialProperties } from '../identity/index.js';
import { recoveryPubBody } from '../pairing/index.js';
import { tokenInfoParams } from '../market/index.js';
import * as responses from './responses-schema.js';
import { signBody } from '../partners/index.js';
import { contactBody, ticketBody } from '../support/index.js';
import { SYNC_OPTIONAL_FIELDS, syncBody } from '../pairing/index.js';
import { tokenBody } from '../push/index.js';

/**
 * The OpenAPI 3.1 document of the HTTP API, built from the very schemas the routes validate with, so it cannot
 * drift from them. One row of OPERATIONS per endpoint: a new route, field or error code is one line here or in
 * src/schemas. The human contract with the same section names is docs/api.md.
 */

type Schema = Record<string, unknown>;

interface Operation {
  method: 'get' | 'post';
  /** OpenAPI path template. */
  path: string;
  summary: string;
  /** The docs/api.md heading that explains it. */
  doc: string;
  /** Path parameters: an object schema whose properties are the parameters. */
  params?: { properties: Schema };
  body?: { schema: string; limitBytes: number };
  /** Component name of `data` in the success answer. */
  data: string;
  /** Under API_PROFILE=ssp-apps the answer is `data` alone: the released apps read it off the body. */
  bareForApps?: true;
  /** Under API_PROFILE=ssp-apps the body may also be form or text `key=value&key=value`. */
  queryStringForApps?: true;
  /** Error codes of this endpoint beyond those every endpoint of its kind can answer. */
  errors: ErrorCode[];
  /** A write an app may sign: the route whose purpose word and mode apply (docs/api.md#identity-signed-requests). */
  signedAs?: SignedRoute;
}

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

/**
 * A request body as clients may send it: unknown fields are dropped, never refused, so nothing says
 * `additionalProperties: false`; a signable write also names the four credential fields.
 */
function requestSchema(schema: object, signable = false, emptyAsAbsent: readonly string[] = []): Schema {
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
    properties: { ...relaxed.properties, ...(signable ? credentialProperties : {}) },
  };
}

const schemas = (profile: ApiProfile): Record<string, object> => ({
  SyncRequest: requestSchema(syncBody, true, SYNC_OPTIONAL_FIELDS),
  SyncRecord: responses.syncRecord,
  ActionRequest: requestSchema(actionBody, true),
  ActionRecord: responses.actionRecord(profile),
  RecoveryPubRequest: requestSchema(recoveryPubBody, true),
  RecoveryPub: responses.recoveryPub,
  NoncesStatus: responses.noncesStatus,
  TokenRequest: requestSchema(tokenBody, true),
  TokenCounts: responses.tokenCounts,
  Rates: responses.rates,
  NetworkFees: responses.networkFees,
  TokenInfo: responses.tokenInfo,
  Services: responses.services,
  SignRequest: signBody,
  Signature: responses.signature,
  TicketRequest: requestSchema(ticketBody),
  ContactRequest: requestSchema(contactBody),
  Queued: responses.queued,
  Health: responses.health,
  OpenApiDocument: { type: 'object', description: 'this document' },
  Error: responses.failure(Object.keys(STATUS) as ErrorCode[]),
});

export const OPERATIONS: readonly Operation[] = [
  {
    method: 'post',
    path: '/v1/sync',
    summary: 'The key app stores the pairing record',
    doc: 'post-v1sync',
    body: { schema: 'SyncRequest', limitBytes: SYNC_BODY_LIMIT },
    data: 'SyncRecord',
    errors: [...SIGNABLE, 'UNAVAILABLE'],
    signedAs: 'sync',
  },
  {
    method: 'get',
    path: '/v1/sync/{id}',
    summary: 'The wallet app polls for the pairing record of its walletIdentity',
    doc: 'get-v1syncid',
    params: idParams,
    data: 'SyncRecord',
    bareForApps: true,
    errors: ['INVALID_PARAMETER', 'NOT_FOUND', 'UNAVAILABLE'],
  },
  {
    method: 'post',
    path: '/v1/action',
    summary: "Replaces the pair's action mailbox and notifies the other app",
    doc: 'post-v1action',
    body: { schema: 'ActionRequest', limitBytes: ACTION_BODY_LIMIT },
    data: 'ActionRecord',
    errors: [...SIGNABLE, 'CONFLICT', 'UNAVAILABLE'],
    signedAs: 'action',
  },
  {
    method: 'get',
    path: '/v1/action/{id}',
    summary: "Reads the pair's action mailbox (id is the wkIdentity); reads never delete",
    doc: 'get-v1actionid',
    params: idParams,
    data: 'ActionRecord',
    bareForApps: true,
    errors: ['INVALID_PARAMETER', 'NOT_FOUND', 'UNAVAILABLE'],
  },
  {
    method: 'post',
    path: '/v1/token',
    summary: 'Registers push-notification tokens of a pair',
    doc: 'push-tokens--post-v1token',
    body: { schema: 'TokenRequest', limitBytes: DEFAULT_BODY_LIMIT },
    data: 'TokenCounts',
    errors: [...SIGNABLE, 'UNAVAILABLE'],
    signedAs: 'token',
  },
  {
    method: 'get',
    path: '/v1/rates',
    summary: 'Exchange rates, refreshed in the background',
    doc: 'get-v1rates',
    data: 'Rates',
    bareForApps: true,
    errors: ['UNAVAILABLE'],
  },
  {
    method: 'get',
    path: '/v1/networkfees',
    summary: 'Network fee estimates per chain',
    doc: 'get-v1networkfees',
    data: 'NetworkFees',
    bareForApps: true,
    errors: ['UNAVAILABLE'],
  },
  {
    method: 'get',
    path: '/v1/tokeninfo/{network}/{address}',
    summary: 'ERC-20 token metadata',
    doc: 'get-v1tokeninfonetworkaddress',
    params: tokenInfoParams,
    data: 'TokenInfo',
    bareForApps: true,
    errors: ['INVALID_PARAMETER', 'NOT_FOUND', 'UNAVAILABLE'],
  },
  {
    method: 'get',
    path: '/v1/services',
    summary: 'Which third-party features the apps should show',
    doc: 'get-v1services',
    data: 'Services',
    bareForApps: true,
    errors: [],
  },
  {
    method: 'post',
    path: '/v1/sign/{partner}',
    summary: "HMAC-SHA256 of an on-ramp partner's parameters",
    doc: 'post-v1signpartner',
    params: { properties: { partner: { type: 'string', description: 'a configured partner: onramper' } } },
    body: { schema: 'SignRequest', limitBytes: SIGN_BODY_LIMIT },
    data: 'Signature',
    bareForApps: true,
    queryStringForApps: true,
    errors: ['NOT_FOUND', 'UNAVAILABLE'],
  },
  {
    method: 'post',
    path: '/v1/recoverypub',
    summary: "Stores the key app's recovery xpub of a pair (always signed; kept without expiry)",
    doc: 'recovery-xpub--post-v1recoverypub-get-v1recoverypubid',
    body: { schema: 'RecoveryPubRequest', limitBytes: DEFAULT_BODY_LIMIT },
    data: 'RecoveryPub',
    errors: [...SIGNABLE, 'UNAVAILABLE'],
    signedAs: 'recoverypub',
  },
  {
    method: 'get',
    path: '/v1/recoverypub/{id}',
    summary: "The key app's recovery xpub of a pair (id is the wkIdentity)",
    doc: 'recovery-xpub--post-v1recoverypub-get-v1recoverypubid',
    params: idParams,
    data: 'RecoveryPub',
    bareForApps: true,
    errors: ['INVALID_PARAMETER', 'NOT_FOUND', 'UNAVAILABLE'],
  },
  {
    method: 'get',
    path: '/v1/nonces/status/{id}',
    summary: 'Whether the apps must replenish enterprise nonces: never, this relay keeps no nonce pools',
    doc: 'nonce-status--get-v1noncesstatusid',
    params: idParams,
    data: 'NoncesStatus',
    errors: ['INVALID_PARAMETER'],
  },
  {
    method: 'post',
    path: '/v1/ticket',
    summary: 'A support ticket, queued for the helpdesk',
    doc: 'support-forms--post-v1ticket-post-v1contact',
    body: { schema: 'TicketRequest', limitBytes: SUPPORT_BODY_LIMIT },
    data: 'Queued',
    errors: ['UNAVAILABLE'],
  },
  {
    method: 'post',
    path: '/v1/contact',
    summary: 'A contact form, queued for the helpdesk',
    doc: 'support-forms--post-v1ticket-post-v1contact',
    body: { schema: 'ContactRequest', limitBytes: SUPPORT_BODY_LIMIT },
    data: 'Queued',
    errors: ['UNAVAILABLE'],
  },
  {
    method: 'get',
    path: '/v1/openapi.json',
    summary: 'This document (not enveloped)',
    doc: 'machine-readable-contract',
    data: 'OpenApiDocument',
    errors: [],
  },
  {
    method: 'get',
    path: '/healthz',
    summary: 'Liveness: the process runs (never looks at Redis); not rate limited',
    doc: 'health--get-healthz-get-readyz',
    data: 'Health',
    errors: [],
  },
  {
    method: 'get',
    path: '/readyz',
    summary: 'Readiness: Redis answers and the instance is not draining; not rate limited',
    doc: 'health--get-healthz-get-readyz',
    data: 'Health',
    errors: ['UNAVAILABLE'],
  },
];

/** Operations whose answer is the payload itself, without `{ success, data }`, whatever the profile. */
const NOT_ENVELOPED = new Set(['/v1/openapi.json']);

function isBare(operation: Operation, profile: ApiProfile): boolean {
  return NOT_ENVELOPED.has(operation.path) || (profile === 'ssp-apps' && operation.bareForApps === true);
}

/** The routes answered bare under `profile`, as the router names them (`GET /v1/sync/:id`). */
export function bareRoutes(profile: ApiProfile): Set<string> {
  return new Set(
    OPERATIONS.filter((operation) => operation.path !== '/v1/openapi.json' && isBare(operation, profile)).map(
      (operation) => `${operation.method.toUpperCase()} ${operation.path.replace(/\{(\w+)\}/g, ':$1')}`,
    ),
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
  const limited = v1 && (status === 200 || codes.includes('RATE_LIMITED'));
  const headers: Schema = {
    'X-Request-Id': headerRef('X-Request-Id', true),
    'X-Content-Type-Options': headerRef('X-Content-Type-Options', true),
  };
  if (v1) for (const name of RATE_LIMIT_HEADERS) headers[name] = headerRef(name, limited);
  if (codes.includes('RATE_LIMITED')) headers['Retry-After'] = headerRef('Retry-After', true);
  else if (codes.includes('UNAVAILABLE')) headers['Retry-After'] = headerRef('Retry-After', false);
  return headers;
}

function responsesOf(operation: Operation, profile: ApiProfile): Schema {
  const data = ref(operation.data);
  const out: Schema = {
    200: {
      description: 'Success',
      headers: headersOf(operation, 200),
      content: {
        'application/json': { schema: isBare(operation, profile) ? data : responses.success(data) },
      },
    },
  };
  const codes = [
    ...ANY_REQUEST,
    ...(operation.path.startsWith('/v1/') ? V1 : []),
    ...(operation.body ? WITH_BODY : []),
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

function parametersOf(operation: Operation): Schema[] | undefined {
  if (!operation.params) return undefined;
  return Object.entries(operation.params.properties).map(([name, schema]) => ({
    name,
    in: 'path',
    required: true,
    description: 'validated after URL decoding',
    schema: portable(schema),
  }));
}

const QUERY_STRING = {
  type: 'string',
  description:
    'the same parameters as key=value&key=value, in the order to sign (form values are URL-decoded)',
};

function operationObject(operation: Operation, profile: ApiProfile): Schema {
  const limit = operation.body?.limitBytes;
  const queryString = profile === 'ssp-apps' && operation.queryStringForApps === true;
  return {
    operationId: `${operation.method}${operation.path.replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string = '') => c.toUpperCase())}`,
    summary: operation.summary,
    externalDocs: { url: `docs/api.md#${operation.doc}` },
    ...(operation.params ? { parameters: parametersOf(operation) } : {}),
    ...(operation.body
      ? {
          requestBody: {
            required: true,
            description:
              `UTF-8 JSON object of at most ${limit} bytes once decoded (Content-Encoding gzip, deflate or br ` +
              'accepted); unknown fields are dropped',
            content: {
              'application/json': { schema: ref(operation.body.schema) },
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

/**
 * No operation takes HTTP credentials (`security: []`). A signable write may carry an identity signature, which
 * travels in the JSON body (no OpenAPI security scheme describes body fields): said in words and in
 * `x-identity-signature`.
 */
function securityOf(operation: Operation): Schema {
  const route = operation.signedAs;
  if (route === undefined) return { security: [], description: 'Security: none.' };
  const when =
    route === 'recoverypub'
      ? 'always required, whatever AUTH_MODE says'
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
      required: route === 'recoverypub' ? 'always' : 'per AUTH_MODE',
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
on /v1/socket/key and /v1/socket/wallet are described by docs/asyncapi.yaml. The human contract is docs/api.md.`;

/** The whole document of the profile the relay runs: a plain JSON value, built once per process. */
export function buildOpenApi(profile: ApiProfile = 'standard'): Record<string, unknown> {
  const paths: Record<string, Schema> = {};
  for (const operation of OPERATIONS) {
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
      // package.json says UNLICENSED: no licence is granted (yet).
      license: { name: 'No licence granted (UNLICENSED)', identifier: 'LicenseRef-UNLICENSED' },
    },
    servers: [{ url: '/', description: 'the relay that serves this document' }],
    paths,
    components: {
      schemas: Object.fromEntries(
        Object.entries(schemas(profile)).map(([name, schema]) => [name, portable(schema)]),
      ),
      headers: headerComponents(paths),
    },
  };
}
