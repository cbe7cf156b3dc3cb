/** A client of the multisig relay: every endpoint, its events, and identity-signed requests. */
export {
  RelayClient,
  type ApiProfile,
  type PollOptions,
  type RelayClientOptions,
  type WriteOptions,
} from './relay-client.js';
export { RelayEvents, type EventOptions, type Side } from './events.js';
export {
  CLOSED_BEFORE_JOIN,
  JoinError,
  RelayError,
  UNEXPECTED_RESPONSE,
  type ErrorDetail,
} from './errors.js';
export {
  bodyDigest,
  CREDENTIAL_FIELDS,
  signBody,
  signMessage,
  witnessScriptOf,
  wkIdentityOf,
  type Credential,
  type PairKeys,
  type Purpose,
  type SignOptions,
} from './signing.js';
export type * from './types.js';
