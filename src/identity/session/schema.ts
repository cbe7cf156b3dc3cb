import { identifier } from '../../core/validation/common-schema.js';
import { credentialProperties } from '../credential-schema.js';

/** The request and answer bodies of the session routes (docs/api.md#sessions). */

const side = {
  type: 'string',
  enum: ['key', 'wallet'],
  description: "the pair's side the token is for",
} as const;
const challenge = {
  type: 'string',
  pattern: '^[0-9a-f]{64}$',
  description: 'the challenge of POST /v1/session/challenge, 64 lowercase hex',
} as const;
const subjectFields = {
  wkIdentity: { ...identifier, description: "the pair's identity (with side)" },
  side,
  walletIdentity: { ...identifier, description: "the wallet's identity, alone: to read its pairing record" },
} as const;
const oneSubject = {
  description: 'a body with wkIdentity and side, or walletIdentity alone',
  anyOf: [
    {
      properties: { wkIdentity: subjectFields.wkIdentity, side, walletIdentity: false },
      required: ['wkIdentity', 'side'],
    },
    {
      properties: { walletIdentity: subjectFields.walletIdentity, wkIdentity: false, side: false },
      required: ['walletIdentity'],
    },
  ],
} as const;

/** POST /v1/session/challenge. */
export const challengeBody = {
  type: 'object',
  properties: subjectFields,
  allOf: [oneSubject],
  additionalProperties: false,
} as const;

/** POST /v1/session without its credential: what the handler validates (the credential is checked apart). */
export const exchangeFields = {
  type: 'object',
  properties: { ...subjectFields, challenge },
  required: ['challenge'],
  allOf: [oneSubject],
  additionalProperties: false,
} as const;

const withCredential = <T extends { properties: object }>(schema: T) => ({
  ...schema,
  properties: { ...schema.properties, ...credentialProperties },
});

/** POST /v1/session as documented: a wallet subject sends no witnessScript. */
export const exchangeBody = withCredential(exchangeFields);

/** POST /v1/session/revoke as documented: a token in the Authorization header, or the credential. */
export const revokeBody = withCredential(challengeBody);

const timestamp = { type: 'string', format: 'date-time' } as const;

/** `data` of POST /v1/session/challenge. */
export const sessionChallenge = {
  type: 'object',
  properties: {
    challenge: {
      ...challenge,
      description: 'sign it as the nonce of a message for "session"; exchange it once',
    },
    expiresAt: { ...timestamp, description: 'SESSION_CHALLENGE_SECONDS after it was issued' },
  },
  required: ['challenge', 'expiresAt'],
  additionalProperties: false,
} as const;

/** `data` of POST /v1/session. */
export const session = {
  type: 'object',
  properties: {
    token: {
      type: 'string',
      maxLength: 1024,
      description: 'a JWT (HS256): send it as Authorization: Bearer',
    },
    tokenType: { const: 'Bearer' },
    expiresAt: timestamp,
    expiresIn: {
      type: 'integer',
      minimum: 1,
      description: 'SESSION_TTL_SECONDS: schedule the renewal from it',
    },
    ...subjectFields,
  },
  required: ['token', 'tokenType', 'expiresAt', 'expiresIn', 'side'],
  allOf: [
    {
      anyOf: [
        { properties: { wkIdentity: subjectFields.wkIdentity }, required: ['wkIdentity'] },
        { properties: { walletIdentity: subjectFields.walletIdentity }, required: ['walletIdentity'] },
      ],
    },
  ],
  additionalProperties: false,
} as const;

/** `data` of POST /v1/session/revoke. */
export const sessionRevoked = {
  type: 'object',
  properties: {
    revokedAt: { ...timestamp, description: 'tokens of that subject side issued before it end' },
  },
  required: ['revokedAt'],
  additionalProperties: false,
} as const;
