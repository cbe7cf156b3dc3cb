import { EVM_CHAINS } from '../core/chains.js';
import type { ErrorCode } from '../core/errors.js';
import { actionBody, streamEpoch } from '../mailbox/index.js';
import { identifier } from '../core/validation/common-schema.js';
import { recoveryPubBody } from '../pairing/index.js';
import type { ApiProfile } from '../core/config/config.js';

/**
 * What the API answers, as JSON Schema. Nothing validates responses at run time; these feed the OpenAPI
 * document (src/openapi) and, through it, the test suite's check of every response it receives. Records are
 * built from the request schemas they store, so a field added to a request flows into its record.
 */

const timestamp = { type: 'string', format: 'date-time' } as const;

export { syncRecord } from '../pairing/index.js';

const expiresAt = {
  ...timestamp,
  description: 'createdAt + ACTION_TTL_SECONDS; gone from the mailbox after it',
} as const;

/**
 * `data` of POST /v1/action and GET /v1/action/{id}, and the data of every socket event. Under the `ssp-apps`
 * profile it also has `expireAt`, the name the released apps' countdown reads.
 */
export function actionRecord(profile: ApiProfile) {
  const apps = profile === 'ssp-apps';
  return {
    type: 'object',
    properties: {
      ...actionRecordProperties,
      ...(apps ? { expireAt: { ...expiresAt, description: 'the same as expiresAt' } } : {}),
    },
    required: ['id', ...actionBody.required, 'createdAt', 'expiresAt', ...(apps ? ['expireAt'] : [])],
    additionalProperties: false,
  } as const;
}

/** A record's receipt: the first ack of its target side (docs/api.md#acks-and-receipts). */
const receipt = {
  type: 'object',
  description:
    "the first ack of the record by its target side's app: it received the record (not that its user approved anything)",
  properties: {
    side: { type: 'string', enum: ['key', 'wallet'], description: 'the side that acknowledged it' },
    at: { ...timestamp, description: 'when the first ack was stored (ISO-8601, UTC, ms)' },
  },
  required: ['side', 'at'],
  additionalProperties: false,
} as const;

const actionRecordProperties = {
  id: {
    type: 'string',
    pattern: '^[A-Za-z0-9_-]{22,36}$',
    description:
      'random identifier of this stored record, new on every POST; the same in GET, events and replays',
  },
  ...actionBody.properties,
  createdAt: { ...timestamp, description: 'when the relay stored it (ISO-8601, UTC)' },
  expiresAt,
  epoch: {
    ...streamEpoch,
    description:
      "the epoch of the pair's stream of this direction; only a record of a type the relay routes has one (docs/api.md#the-pairs-stream)",
  },
  offset: {
    type: 'integer',
    minimum: 1,
    maximum: Number.MAX_SAFE_INTEGER,
    description: 'the position of the record in its epoch: 1, 2, 3, … per pair and direction, in write order',
  },
  delivered: {
    ...receipt,
    description:
      'in GET and stream reads, once acknowledged (never in events or the POST answer): ' +
      receipt.description,
  },
} as const;

/** `data` of POST /v1/action/{wkIdentity}/{id}/ack: the record acknowledged and its receipt. */
export const ack = {
  type: 'object',
  properties: {
    id: actionRecordProperties.id,
    wkIdentity: identifier,
    action: identifier,
    epoch: actionRecordProperties.epoch,
    offset: actionRecordProperties.offset,
    delivered: receipt,
  },
  required: ['id', 'wkIdentity', 'action', 'epoch', 'offset', 'delivered'],
  additionalProperties: false,
} as const;

/** The `delivered` event's data (docs/api.md#acks-and-receipts). */
export const deliveredEvent = {
  type: 'object',
  properties: {
    wkIdentity: identifier,
    id: actionRecordProperties.id,
    action: identifier,
    epoch: actionRecordProperties.epoch,
    offset: actionRecordProperties.offset,
    ...receipt.properties,
  },
  required: ['wkIdentity', 'id', 'action', 'epoch', 'offset', 'side', 'at'],
  additionalProperties: false,
} as const;

/** A stream read's answer (docs/api.md#stream-read-and-long-poll); its records are ActionRecords. */
export function actionStream(profile: ApiProfile) {
  return {
    type: 'object',
    description:
      profile === 'ssp-apps'
        ? 'the answer itself, without the envelope, as every answer of this route under ssp-apps'
        : "the direction's records after the client's position",
    properties: {
      epoch: {
        anyOf: [streamEpoch, { type: 'null' }],
        description: "the direction's current epoch; null when it has no position",
      },
      offset: {
        type: 'integer',
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description: "the direction's last offset (0 when none): the client's next `after`",
      },
      recovered: {
        type: 'boolean',
        description: "whether every record after the client's position is among `records`",
      },
      records: {
        type: 'array',
        maxItems: 300,
        description:
          'in increasing offset order: the records after `after` when `epoch` is the current one, else every retained one',
        items: { $ref: '#/components/schemas/ActionRecord' },
      },
    },
    required: ['epoch', 'offset', 'recovered', 'records'],
    additionalProperties: false,
  } as const;
}

const count = { type: 'integer', minimum: 0, maximum: 100 } as const;

export const tokenCounts = {
  type: 'object',
  description: 'how many tokens each side of the pair has registered; tokens themselves are never echoed',
  properties: { wkIdentity: identifier, keyTokens: count, walletTokens: count },
  required: ['wkIdentity', 'keyTokens', 'walletTokens'],
  additionalProperties: false,
} as const;

const priceTable = (description: string) =>
  ({ type: 'object', description, additionalProperties: { type: 'number', minimum: 0 } }) as const;

export const rates = {
  type: 'object',
  properties: {
    fiat: priceTable('units of each currency per 1 USD (USD is 1; BTC and ETH are 1 / their USD price)'),
    crypto: priceTable('USD price by lowercase chain id and lowercase token symbol (testnets are 0)'),
    updatedAt: { ...timestamp, description: 'when the older of the two parts was fetched' },
  },
  required: ['fiat', 'crypto', 'updatedAt'],
  additionalProperties: false,
} as const;

const feeLevel = { type: 'number', minimum: 0 } as const;

export const networkFees = {
  type: 'array',
  description: 'one entry per chain that has a value: sat/vB on UTXO chains, gwei on EVM chains',
  items: {
    type: 'object',
    properties: {
      coin: identifier,
      base: { ...feeLevel, description: 'EVM only: 2 × the latest base fee' },
      economy: feeLevel,
      normal: feeLevel,
      fast: feeLevel,
      recommended: feeLevel,
      updatedAt: timestamp,
    },
    required: ['coin', 'economy', 'normal', 'fast', 'recommended', 'updatedAt'],
    additionalProperties: false,
  },
} as const;

export const tokenInfo = {
  type: 'object',
  properties: {
    network: { type: 'string', enum: EVM_CHAINS },
    address: { type: 'string', pattern: '^0x[0-9a-f]{40}$', description: 'lowercased' },
    name: { type: 'string' },
    symbol: { type: 'string' },
    decimals: { type: 'integer', minimum: 0, maximum: 36 },
    logo: { type: ['string', 'null'], description: 'always null for now' },
  },
  required: ['network', 'address', 'name', 'symbol', 'decimals', 'logo'],
  additionalProperties: false,
} as const;

export const services = {
  type: 'object',
  description: 'the SERVICES configuration: which third-party features the apps should show',
  additionalProperties: true,
} as const;

export const signature = {
  type: 'object',
  properties: {
    signature: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'HMAC-SHA256 of signedData, hex' },
    signedData: { type: 'string', description: 'key=value&key=value in the order the keys were given' },
  },
  required: ['signature', 'signedData'],
  additionalProperties: false,
} as const;

export const queued = {
  type: 'object',
  properties: {
    id: {
      type: 'string',
      minLength: 1,
      description: 'the job id; the same submission within 24 h gets the same',
    },
    status: { const: 'queued' },
  },
  required: ['id', 'status'],
  additionalProperties: false,
} as const;

/** `data` of POST /v1/recoverypub and GET /v1/recoverypub/{id}. */
export const recoveryPub = {
  type: 'object',
  properties: {
    ...recoveryPubBody.properties,
    createdAt: { ...timestamp, description: 'when the relay stored it (ISO-8601, UTC)' },
  },
  required: [...recoveryPubBody.required, 'createdAt'],
  additionalProperties: false,
} as const;

/** One side of a pair's presence (docs/api.md#presence). */
export const sidePresence = {
  type: 'object',
  properties: {
    connected: {
      type: 'boolean',
      description: "a socket of this side is joined to the pair's room, on any pod",
    },
    lastSeen: {
      anyOf: [timestamp, { type: 'null' }],
      description:
        'now while connected, else when its last socket left; null when not seen within PRESENCE_LAST_SEEN_SECONDS',
    },
  },
  required: ['connected', 'lastSeen'],
  additionalProperties: false,
} as const;

/** `data` of GET /v1/presence/{id}: each side of the pair. */
export const presence = {
  type: 'object',
  properties: { key: sidePresence, wallet: sidePresence },
  required: ['key', 'wallet'],
  additionalProperties: false,
} as const;

const never = { type: 'boolean', const: false } as const;

/** `data` of GET /v1/nonces/status/{id}: this relay keeps no enterprise nonce pools to replenish. */
export const noncesStatus = {
  type: 'object',
  properties: {
    replenishNeeded: {
      type: 'object',
      properties: { key: never, wallet: never },
      required: ['key', 'wallet'],
      additionalProperties: false,
    },
  },
  required: ['replenishNeeded'],
  additionalProperties: false,
} as const;

export const health = {
  type: 'object',
  properties: { status: { enum: ['ok', 'ready'] } },
  required: ['status'],
  additionalProperties: false,
} as const;

/** `{ success: true, data }` around a payload schema. */
export function success(data: object) {
  return {
    type: 'object',
    properties: { success: { const: true }, data },
    required: ['success', 'data'],
    additionalProperties: false,
  } as const;
}

/** `{ success: false, error }` with the codes one status can carry. */
export function failure(codes: readonly ErrorCode[]) {
  return {
    type: 'object',
    properties: {
      success: { const: false },
      error: {
        type: 'object',
        properties: {
          code: { type: 'string', enum: codes },
          message: { type: 'string', minLength: 1, description: 'one sentence for a person' },
          details: {
            type: 'array',
            description: 'validation only: one entry per field',
            items: {
              type: 'object',
              properties: {
                field: { type: 'string', description: 'JSON pointer prefixed by where: /body/…, /params/…' },
                message: { type: 'string' },
              },
              required: ['field', 'message'],
              additionalProperties: false,
            },
          },
          requestId: { type: 'string', description: 'the X-Request-Id of the response' },
        },
        required: ['code', 'message', 'requestId'],
        additionalProperties: false,
      },
    },
    required: ['success', 'error'],
    additionalProperties: false,
  } as const;
}
