/** The relay's request bodies and answers (docs/api.md), as this client sends and returns them. */

export interface SyncRequest {
  chain: string;
  walletIdentity: string;
  keyXpub: string;
  wkIdentity: string;
  generatedAddress?: string;
  publicNonces?: (string | { kPublic: string; kTwoPublic: string })[];
  walletXpub?: string;
  keyIdentity?: string;
  redeemScript?: string;
  witnessScript?: string;
  recoveryXpub?: string;
  xpubSignature?: string;
  /** Registered for the pair's key side as `POST /v1/token` would, then dropped from the record. */
  keyToken?: string | null;
}

/** The stored pairing record: the fields of the request that were given, `keyToken` aside. */
export type SyncRecord = Omit<SyncRequest, 'keyToken'>;

export interface Utxo {
  txid: string;
  vout: number | string;
  scriptPubKey?: string;
  satoshis?: number | string;
  confirmations?: number;
  coinbase?: boolean;
}

export interface ActionRequest {
  chain: string;
  wkIdentity: string;
  action: string;
  payload: string;
  path?: string;
  utxos?: Utxo[];
}

export interface ActionRecord extends ActionRequest {
  /** A random identifier of this stored record, new on every POST; the same in GET and events. */
  id: string;
  createdAt: string;
  expiresAt: string;
  /** The same as `expiresAt`, under the relay's `ssp-apps` profile. */
  expireAt?: string;
  /** The epoch of the pair's stream of this record's direction; only a record of a type the relay routes has one. */
  epoch?: string;
  /** The record's place in that epoch: 1, 2, 3, … per pair and direction, in write order. */
  offset?: number;
  /** In GET answers, once the app of the record's target side acknowledged it: its first ack. */
  delivered?: Receipt;
}

/** The first ack of a record (docs/api.md#acks-and-receipts). */
export interface Receipt {
  side: 'key' | 'wallet';
  at: string;
}

/** The answer to an ack: the record acknowledged and its (first) receipt. */
export interface Ack {
  id: string;
  wkIdentity: string;
  action: string;
  epoch: string;
  offset: number;
  delivered: Receipt;
}

/** The `delivered` event: a record this side sent was acknowledged by the other side's app. */
export interface Delivered extends Receipt {
  wkIdentity: string;
  id: string;
  action: string;
  epoch: string;
  offset: number;
}

/**
 * A direction's records after a client's position (`pollAction`): `epoch` and `offset` are the direction's
 * current position, the next call's `epoch` and `after`.
 */
export interface ActionStream {
  /** null while the direction has no position. */
  epoch: string | null;
  /** The direction's last offset (0: none). */
  offset: number;
  /** Whether every record after the position is among `records`; false: some were lost, read the mailbox. */
  recovered: boolean;
  /** In increasing offset order. */
  records: ActionRecord[];
}

export interface TokenRequest {
  wkIdentity: string;
  keyToken?: string;
  walletToken?: string;
}

export interface TokenCounts {
  wkIdentity: string;
  keyTokens: number;
  walletTokens: number;
}

export interface Rates {
  /** Units of each currency per 1 USD. */
  fiat: Record<string, number>;
  /** USD price by lowercase chain id and token symbol. */
  crypto: Record<string, number>;
  updatedAt: string;
}

/** sat/vB on UTXO chains, gwei on EVM chains (which also have `base`). */
export interface NetworkFee {
  coin: string;
  base?: number;
  economy: number;
  normal: number;
  fast: number;
  recommended: number;
  updatedAt: string;
}

export interface TokenInfo {
  network: string;
  address: string;
  name: string;
  symbol: string;
  decimals: number;
  logo: string | null;
}

export type Services = Record<string, unknown>;

export interface PartnerSignature {
  signature: string;
  signedData: string;
}

export interface TicketRequest {
  subject: string;
  description: string;
  type: string;
  email: string;
}

export interface ContactRequest {
  name: string;
  email: string;
  message: string;
}

export interface Queued {
  id: string;
  status: 'queued';
}

export interface RecoveryPubRequest {
  wkIdentity: string;
  recoveryXpub: string;
  xpubSignature: string;
  chain: string;
}

export interface RecoveryPub extends RecoveryPubRequest {
  createdAt: string;
}

export interface NoncesStatus {
  replenishNeeded: { key: boolean; wallet: boolean };
}

export interface Health {
  status: string;
}

/** One side of a pair: whether it has a socket in the pair's room, and when it was last seen (docs/api.md#presence). */
export interface SidePresence {
  connected: boolean;
  /** ISO-8601: now while connected, else when its last socket left; null when not seen for a while. */
  lastSeen: string | null;
}

/** `GET /v1/presence/{wkIdentity}`. */
export interface PairPresence {
  key: SidePresence;
  wallet: SidePresence;
}

/** What a join's acknowledgement tells: the position of the path's direction and the other side's presence. */
export interface JoinedAnswer {
  epoch: string | null;
  offset: number;
  peer: SidePresence;
  /** A join with `since` only: whether every record after that position was still there and was sent. */
  recovered?: boolean;
  /** A join with `since` only: how many records this join sent. */
  replayed?: number;
}

/** Where a client is in the stream of one direction: the epoch and offset of the last record it has. */
export interface StreamPosition {
  epoch: string;
  offset: number;
}

/** The `presence` event: a side of the pair went connected or not connected. */
export interface PresenceChange extends SidePresence {
  wkIdentity: string;
  side: 'key' | 'wallet';
}
