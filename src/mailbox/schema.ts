import { EVM_CHAINS, UTXO_CHAINS } from '../core/chains.js';
import { identifier } from '../core/validation/common-schema.js';

const nonNegativeIntegerString = (maxPattern: string) => ({ type: 'string', pattern: maxPattern }) as const;

const utxo = {
  type: 'object',
  properties: {
    txid: { type: 'string', minLength: 1, maxLength: 200 },
    vout: {
      description: 'an integer from 0 to 100000, as a number or a digit string',
      anyOf: [
        { type: 'integer', minimum: 0, maximum: 100_000 },
        nonNegativeIntegerString('^(0|[1-9][0-9]{0,4}|100000)$'),
      ],
    },
    scriptPubKey: { type: 'string', maxLength: 10_000, pattern: '^(?:[0-9a-fA-F]{2})*$' },
    satoshis: {
      description: 'an integer from 0 to 10^18, as a number or a digit string',
      anyOf: [
        { type: 'integer', minimum: 0, maximum: 1e18 },
        nonNegativeIntegerString('^(0|[1-9][0-9]{0,17}|1000000000000000000)$'),
      ],
    },
    confirmations: { type: 'integer', minimum: 0 },
    coinbase: { type: 'boolean' },
  },
  required: ['txid', 'vout'],
  additionalProperties: false,
} as const;

/**
 * docs/api.md#post-v1action. Chain-aware payload checks are part of the schema: a `tx` on a UTXO chain must be hex, a `tx` or
 * `evmsigningrequest` on an EVM chain must be a JSON object (the `jsonObjectString` keyword).
 */
export const actionBody = {
  type: 'object',
  properties: {
    chain: identifier,
    wkIdentity: identifier,
    action: identifier,
    payload: { type: 'string', minLength: 1, maxLength: 1_000_000 },
    path: {
      description: 'a BIP32-style path such as 0-0, or empty',
      anyOf: [{ type: 'string', maxLength: 0 }, identifier],
    },
    utxos: { type: 'array', maxItems: 10_000, items: utxo },
  },
  required: ['chain', 'wkIdentity', 'action', 'payload'],
  additionalProperties: false,
  allOf: [
    {
      if: { properties: { action: { const: 'tx' } }, required: ['action'] },
      then: { required: ['path'], properties: { path: { type: 'string', minLength: 1 } } },
    },
    {
      if: {
        properties: { chain: { enum: UTXO_CHAINS }, action: { const: 'tx' } },
        required: ['chain', 'action'],
      },
      then: { properties: { payload: { type: 'string', pattern: '^(?:[0-9a-fA-F]{2})+$' } } },
    },
    {
      if: {
        properties: { chain: { enum: EVM_CHAINS }, action: { enum: ['tx', 'evmsigningrequest'] } },
        required: ['chain', 'action'],
      },
      then: { properties: { payload: { type: 'string', jsonObjectString: true } } },
    },
  ],
} as const;

/** A stream's epoch: drawn by the relay, never reused for a pair and direction. */
export const streamEpoch = { type: 'string', pattern: '^[A-Za-z0-9_-]{8,32}$' } as const;

/**
 * A client's position in a direction's stream (docs/api.md#the-pairs-stream): the offset of the last record it
 * has (0: none) and, when it has one, that record's epoch.
 */
export const streamPosition = {
  type: 'object',
  properties: {
    epoch: streamEpoch,
    offset: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
  },
  required: ['offset'],
  // Refuses other members rather than removing them, as `false` does (docs/api.md#resuming-the-stream).
  additionalProperties: { not: {} },
  if: { properties: { offset: { type: 'integer', exclusiveMinimum: 0 } } },
  then: { required: ['epoch'] },
} as const;

/** docs/api.md#post-v1actionwkidentityidack: the pair and the id of the record acknowledged. */
export const ackParams = {
  type: 'object',
  properties: { wkIdentity: identifier, id: identifier },
  required: ['wkIdentity', 'id'],
  additionalProperties: false,
} as const;

/** An ack's body: an object (`{}`), which carries the credential. */
export const ackBody = { type: 'object', properties: {}, additionalProperties: false } as const;

/** The longest a stream read is held, in seconds. */
export const LONGEST_WAIT_SECONDS = 25;

/**
 * The query of a stream read (docs/api.md#stream-read-and-long-poll), as the URL carries it: text. `to` and
 * `after` go together, `epoch` and `wait` only with them; other parameters are ignored, as on every read.
 */
export const streamQuery = {
  type: 'object',
  properties: {
    to: { type: 'string', enum: ['key', 'wallet'] },
    after: {
      type: 'string',
      pattern: '^(0|[1-9][0-9]{0,15})$',
      description: 'an integer from 0 to 2^53 − 1',
    },
    epoch: streamEpoch,
    wait: {
      type: 'string',
      pattern: '^([0-9]|1[0-9]|2[0-5])$',
      description: `an integer from 0 to ${LONGEST_WAIT_SECONDS}: seconds to hold the request when there is nothing to return`,
    },
  },
  allOf: [
    ...(
      [
        ['to', 'after'],
        ['after', 'to'],
        ['epoch', 'to'],
        ['wait', 'to'],
      ] as const
    ).map(([given, needed]) => ({ if: { required: [given] }, then: { required: [needed] } })),
    {
      if: { properties: { after: { not: { const: '0' } } }, required: ['after'] },
      then: { required: ['epoch'] },
    },
  ],
} as const;
