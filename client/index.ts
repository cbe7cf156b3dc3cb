/** A client of the multisig relay: every endpoint, its events, and identity-signed requests. */
export {
  RelayClient,
  RelaySession,
  type ApiProfile,
  type PollOptions,
  type RelayClientOptions,
  type Subject,
  type WriteOptions,
} from './relay-client.js';
export { RelayEvents, type EventOptions, type JoinToken, type Side } from './events.js';
export type { SessionGrant, SessionOptions } from './session.js';
export {
  CLOSED_BEFORE_JOIN,
  JoinError,
  RelayError,
  SESSION_CLOSED,
  SessionEnded,
  UNEXPECTED_RESPONSE,
  type ErrorDetail,
  type SessionEndReason,
} from './errors.js';
export {
  bodyDigest,
  CREDENTIAL_FIELDS,
  publicKeyOf,
  signBody,
  signMessage,
  signWalletBody,
  walletIdentityOf,
  witnessScriptOf,
  wkIdentityOf,
  type Credential,
  type PairKeys,
  type Purpose,
  type SignOptions,
  type WalletCredential,
} from './signing.js';
export type * from './types.js';
