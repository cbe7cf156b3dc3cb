/** Domain types shared by routes, stores, the queue and the worker. */

export interface SyncRecord {
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
}

interface Utxo {
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
  /** A random identifier of this stored record, new on every POST: what deliveries and push jobs go by. */
  id: string;
  createdAt: string;
  expiresAt: string;
  /** The same as expiresAt, under API_PROFILE=ssp-apps (the released apps' countdown reads this name). */
  expireAt?: string;
}

/** The key app's recovery account xpub of a pair, kept RECOVERYPUB_TTL_DAYS after its last write or read. */
export interface RecoveryPub {
  wkIdentity: string;
  recoveryXpub: string;
  xpubSignature: string;
  chain: string;
  createdAt: string;
}

export interface TokenRegistration {
  wkIdentity: string;
  keyToken?: string;
  walletToken?: string;
}

export interface TokenCounts {
  wkIdentity: string;
  keyTokens: number;
  walletTokens: number;
}

/**
 * What a verified write stored, as its answer's payload (JSON text), found by the id the write went by; null
 * once it is gone (replaced or expired). `body` is the resend's, byte for byte the first request's.
 */
export type StoredAnswer = (body: Record<string, unknown>, writeId: string) => Promise<string | null>;
