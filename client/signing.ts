import { secp256k1 } from '@noble/curves/secp256k1.js';
import { ripemd160 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, concatBytes, hexToBytes, randomBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { base58check, base64, bech32 } from '@scure/base';

/**
 * Identity-signed requests (docs/api.md#identity-signed-requests): the four fields an app adds to a write or a
 * socket `join`, a BIP-137 signature by one of the pair's two identity keys over a message that binds the
 * purpose, the pair, a fresh nonce and the hash of the body.
 */

/**
 * What a message is signed for: `POST /v1/action`, `/v1/token`, `/v1/sync` (and `/v1/recoverypub`), `join`,
 * `session` (a session's challenge, docs/api.md#sessions), and `ack` (`POST /v1/action/{wkIdentity}/{id}/ack`).
 */
export type Purpose = 'action' | 'token' | 'sync' | 'join' | 'session' | 'ack';

/** The fields a signature adds; never part of what `data` hashes. */
export const CREDENTIAL_FIELDS = ['signature', 'message', 'publicKey', 'witnessScript'] as const;

export interface Credential {
  signature: string;
  message: string;
  publicKey: string;
  witnessScript: string;
}

/** The signing side's identity key and both public keys of the pair (compressed, 66 hex characters). */
export interface PairKeys {
  /** The wallet's or the key app's identity private key: 32 bytes, or 64 hex characters. */
  privateKey: Uint8Array | string;
  walletPublicKey: string;
  keyPublicKey: string;
}

/** The three fields a wallet identity key signs with: a `walletIdentity` names no script. */
export type WalletCredential = Omit<Credential, 'witnessScript'>;

/** Fixed values instead of the clock and a random nonce (reproducing a test vector). */
export interface SignOptions {
  timestamp?: number;
  /** 64 lowercase hex characters. */
  nonce?: string;
  /** The pair, when the path names it and the body does not (an ack). */
  wkIdentity?: string;
}

/** The pair's 2-of-2 script `52 21 <A> 21 <B> 52 ae`, the two keys in sorted order (BIP-67). */
export function witnessScriptOf(walletPublicKey: string, keyPublicKey: string): string {
  const [a, b] = [walletPublicKey.toLowerCase(), keyPublicKey.toLowerCase()].sort();
  return `5221${a}21${b}52ae`;
}

/** The pair's `wkIdentity`: the P2WSH address (bech32, version 0) of its script; `tb` on test networks. */
export function wkIdentityOf(walletPublicKey: string, keyPublicKey: string, hrp: 'bc' | 'tb' = 'bc'): string {
  const program = sha256(hexToBytes(witnessScriptOf(walletPublicKey, keyPublicKey)));
  return bech32.encode(hrp, [0, ...bech32.toWords(program)]);
}

/** Hex SHA-256 of `JSON.stringify` of the body without the four fields, keys in their order. */
export function bodyDigest(body: Readonly<Record<string, unknown>>): string {
  const rest = Object.fromEntries(
    Object.entries(body).filter(([key]) => !(CREDENTIAL_FIELDS as readonly string[]).includes(key)),
  );
  return bytesToHex(sha256(utf8ToBytes(JSON.stringify(rest))));
}

const MESSAGE_MAGIC = utf8ToBytes('\x18Bitcoin Signed Message:\n');

/** Bitcoin's CompactSize length prefix (a message is at most 1,024 bytes: never the 4-byte form). */
function varint(length: number): Uint8Array {
  return length < 0xfd ? Uint8Array.of(length) : Uint8Array.of(0xfd, length & 0xff, length >> 8);
}

const privateKeyBytes = (key: Uint8Array | string) => (typeof key === 'string' ? hexToBytes(key) : key);

/** The compressed public key (66 hex characters) of a private key. */
export const publicKeyOf = (privateKey: Uint8Array | string) =>
  bytesToHex(secp256k1.getPublicKey(privateKeyBytes(privateKey), true));

const base58 = base58check(sha256);

/** The `walletIdentity` of a key: the P2PKH address of its compressed public key, `m…`/`n…` on test networks. */
export function walletIdentityOf(publicKey: string, testnet = false): string {
  const hash = ripemd160(sha256(hexToBytes(publicKey)));
  return base58.encode(concatBytes(Uint8Array.of(testnet ? 0x6f : 0x00), hash));
}

/**
 * A BIP-137 "Bitcoin Signed Message" signature for a compressed key, base64 of 65 bytes: header 31 + recovery
 * id, then r ‖ s, over SHA-256(SHA-256(magic ‖ varint(length) ‖ message)); deterministic (RFC 6979).
 */
export function signMessage(message: string, privateKey: Uint8Array | string): string {
  const bytes = utf8ToBytes(message);
  const digest = sha256(sha256(concatBytes(MESSAGE_MAGIC, varint(bytes.length), bytes)));
  const signature = secp256k1.sign(digest, privateKeyBytes(privateKey), {
    prehash: false,
    format: 'recovered',
  });
  signature[0] = 31 + signature[0]!;
  return base64.encode(signature);
}

/** `message` for `identity` and `body`, signed for `purpose` by `privateKey`, and the signer's public key. */
function signFor(
  identity: string,
  body: Readonly<Record<string, unknown>>,
  purpose: Purpose,
  privateKey: Uint8Array | string,
  options: SignOptions,
): WalletCredential {
  const message = JSON.stringify({
    timestamp: options.timestamp ?? Date.now(),
    action: purpose,
    identity,
    nonce: options.nonce ?? bytesToHex(randomBytes(32)),
    data: bodyDigest(body),
  });
  return { signature: signMessage(message, privateKey), message, publicKey: publicKeyOf(privateKey) };
}

/**
 * The four fields for `body` (which names its pair in `wkIdentity`), signed for `purpose` by `keys.privateKey`.
 * Send the body with these fields added after its own, unchanged: the relay hashes what it parses.
 */
export function signBody(
  body: Readonly<Record<string, unknown>>,
  purpose: Purpose,
  keys: PairKeys,
  options: SignOptions = {},
): Credential {
  const wkIdentity = options.wkIdentity ?? body.wkIdentity;
  if (typeof wkIdentity !== 'string') throw new TypeError('a signed body names its pair in wkIdentity');
  const publicKey = publicKeyOf(keys.privateKey);
  if (![keys.walletPublicKey, keys.keyPublicKey].some((key) => key.toLowerCase() === publicKey)) {
    throw new TypeError('the private key is neither of the pair’s two keys');
  }
  return {
    ...signFor(wkIdentity, body, purpose, keys.privateKey, options),
    witnessScript: witnessScriptOf(keys.walletPublicKey, keys.keyPublicKey),
  };
}

/**
 * The three fields for `body` (which names the key's own address, mainnet or testnet, in `walletIdentity`),
 * signed for `purpose` by the wallet identity key `privateKey`: the credential of a wallet session's exchange.
 */
export function signWalletBody(
  body: Readonly<Record<string, unknown>>,
  purpose: Purpose,
  privateKey: Uint8Array | string,
  options: SignOptions = {},
): WalletCredential {
  const publicKey = publicKeyOf(privateKey);
  if (![false, true].some((testnet) => body.walletIdentity === walletIdentityOf(publicKey, testnet))) {
    throw new TypeError('a wallet-signed body names the key’s own address in walletIdentity');
  }
  return signFor(body.walletIdentity as string, body, purpose, privateKey, options);
}
