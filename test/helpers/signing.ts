import { createHash, randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bech32 } from '@scure/base';
import { p2pkhAddress, signedMessageDigest } from '../../src/identity/bitcoin.js';
import type { AuthRoute } from '../../src/core/signed-routes.js';

/** The test keys of the reference vector: the wallet's `11`×32, the key app's `22`×32. */
export const WALLET_PRIVATE = Buffer.from('11'.repeat(32), 'hex');
export const KEY_PRIVATE = Buffer.from('22'.repeat(32), 'hex');
export const STRANGER_PRIVATE = Buffer.from('33'.repeat(32), 'hex');

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
export const publicKeyOf = (privateKey: Uint8Array) => hex(secp256k1.getPublicKey(privateKey, true));

export interface Pair {
  walletPrivate: Buffer;
  keyPrivate: Buffer;
  wkIdentity: string;
  witnessScript: string;
  /** P2PKH addresses of the two keys: a sync's walletIdentity is the wallet's. */
  walletIdentity: string;
  keyIdentity: string;
}

/** A pair as the apps build it: a 2-of-2 P2WSH of the two keys in sorted order (BIP-67). */
export function pairOf(walletPrivate: Buffer, keyPrivate: Buffer, hrp: 'bc' | 'tb' = 'bc'): Pair {
  const [a, b] = [publicKeyOf(walletPrivate), publicKeyOf(keyPrivate)].sort();
  const witnessScript = `5221${a}21${b}52ae`;
  const program = createHash('sha256').update(Buffer.from(witnessScript, 'hex')).digest();
  const network = hrp === 'bc' ? 'mainnet' : 'testnet';
  return {
    walletPrivate,
    keyPrivate,
    wkIdentity: bech32.encode(hrp, [0, ...bech32.toWords(program)]),
    witnessScript,
    walletIdentity: p2pkhAddress(secp256k1.getPublicKey(walletPrivate, true), network),
    keyIdentity: p2pkhAddress(secp256k1.getPublicKey(keyPrivate, true), network),
  };
}

/** The reference pair; a second pair for "another pair" cases. */
export const PAIR = pairOf(WALLET_PRIVATE, KEY_PRIVATE);
export const OTHER_PAIR = pairOf(Buffer.from('44'.repeat(32), 'hex'), Buffer.from('55'.repeat(32), 'hex'));

/** BIP-137 compressed: header 31 + recovery id, then r ‖ s; deterministic (RFC 6979), as the apps sign. */
export function signMessage(message: string, privateKey: Uint8Array): string {
  const digest = signedMessageDigest(Buffer.from(message, 'utf8'));
  const recovered = secp256k1.sign(digest, privateKey, { prehash: false, format: 'recovered' });
  const signature = Buffer.from(recovered);
  signature[0] = 31 + signature[0]!;
  return signature.toString('base64');
}

export interface SignOptions {
  purpose: AuthRoute | 'session';
  pair?: Pair;
  /** Which key of the pair signs (default the wallet's). */
  by?: 'wallet' | 'key';
  /** Signs with this key instead, still naming `publicKey` (a forgery). */
  privateKey?: Uint8Array;
  publicKey?: string;
  timestamp?: number;
  nonce?: string;
  identity?: string;
}

export const dataOf = (body: object) => createHash('sha256').update(JSON.stringify(body)).digest('hex');
export const newNonce = () => randomBytes(32).toString('hex');

/** `body` with the four fields an app adds, signed for `purpose`. */
export function signed<T extends { wkIdentity?: string }>(body: T, options: SignOptions) {
  const pair = options.pair ?? PAIR;
  const signer = options.by === 'key' ? pair.keyPrivate : pair.walletPrivate;
  const message = JSON.stringify({
    timestamp: options.timestamp ?? Date.now(),
    action: options.purpose,
    identity: options.identity ?? body.wkIdentity,
    nonce: options.nonce ?? newNonce(),
    data: dataOf(body),
  });
  return {
    ...body,
    signature: signMessage(message, options.privateKey ?? signer),
    message,
    publicKey: options.publicKey ?? publicKeyOf(signer),
    witnessScript: pair.witnessScript,
  };
}

/** The reference vector, as given to client developers (docs/api.md). */
export const VECTOR = {
  walletIdentity: '1Q1pE5vPGEEMqRcVRMbtBK842Y6Pzo6nK9',
  wkIdentity: 'bc1qs3s3lx8drrf85sk0gq76uqcfx5w44xjfmpmj0emzr9zk5pw0xzyq6kd8lq',
  witnessScript:
    '522102466d7fcae563e5cb09a0d1870bb580344804617879a14949cf22285f1bae3f2721034f355bdcb7cc0af728ef3cceb9615d90684bb5b2ca5f859ab0f0b704075871aa52ae',
  data: '03d151380201db0f30ef0faf7001f3c2679df7b9d94214fc0216d36c66e2a557',
  publicKey: '034f355bdcb7cc0af728ef3cceb9615d90684bb5b2ca5f859ab0f0b704075871aa',
  signature: 'H3U+K1l3lGbVBc8Okkqhi9EG2UEcrraYaBrgdihXSV0teNUe/JIU8v1sM+1wwdA+BcHNYEby4bb/CerYj6/L+HA=',
  now: 1767225600000,
};

/** The vector's request without the four fields: what `data` is the hash of, and what the relay keeps. */
export const VECTOR_REQUEST = {
  action: 'tx',
  payload: 'deadbeef',
  chain: 'btc',
  path: '0-0',
  wkIdentity: VECTOR.wkIdentity,
  utxos: [],
};

/** The vector's body as the wallet sends it: the action, then the four fields. */
export function vectorBody(): Record<string, unknown> {
  const message = `{"timestamp":1767225600000,"action":"action","identity":"${VECTOR.wkIdentity}","nonce":"${'ab'.repeat(32)}","data":"${VECTOR.data}"}`;
  return {
    ...VECTOR_REQUEST,
    signature: VECTOR.signature,
    message,
    publicKey: VECTOR.publicKey,
    witnessScript: VECTOR.witnessScript,
  };
}
