import { ripemd160 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { base58check, bech32 } from '@scure/base';

/** The Bitcoin primitives the identity checks need; nothing here knows about requests. */

const MESSAGE_MAGIC = new TextEncoder().encode('\x18Bitcoin Signed Message:\n');

/** Bitcoin's CompactSize prefix of a length (a message is at most 1,024 bytes, so never the 4-byte form). */
function varint(length: number): Uint8Array {
  return length < 0xfd ? Uint8Array.of(length) : Uint8Array.of(0xfd, length & 0xff, length >> 8);
}

/** What a "Bitcoin Signed Message" signs: magic ‖ varint(len) ‖ message. */
export function framedMessage(message: Uint8Array): Uint8Array {
  const prefix = varint(message.length);
  const framed = new Uint8Array(MESSAGE_MAGIC.length + prefix.length + message.length);
  framed.set(MESSAGE_MAGIC);
  framed.set(prefix, MESSAGE_MAGIC.length);
  framed.set(message, MESSAGE_MAGIC.length + prefix.length);
  return framed;
}

/** BIP-137 digest: SHA-256(SHA-256(framed message)). */
export function signedMessageDigest(message: Uint8Array): Uint8Array {
  return sha256(sha256(framedMessage(message)));
}

export type Network = 'mainnet' | 'testnet';

const NETWORK_OF_HRP: Record<string, Network> = { bc: 'mainnet', tb: 'testnet' };
const P2PKH_VERSION: Record<Network, number> = { mainnet: 0x00, testnet: 0x6f };

/** A P2WSH address's network and 32-byte witness program (bech32, version 0, `bc` or `tb`), else undefined. */
export function p2wshProgram(address: string): { network: Network; program: Uint8Array } | undefined {
  // bech32 (not bech32m) is the encoding of version 0; 90 characters is the segwit address limit.
  const decoded = bech32.decodeUnsafe(address, 90);
  if (!decoded || !Object.hasOwn(NETWORK_OF_HRP, decoded.prefix) || decoded.words[0] !== 0) return undefined;
  const program = bech32.fromWordsUnsafe(decoded.words.slice(1));
  if (!program || program.length !== 32) return undefined;
  return { network: NETWORK_OF_HRP[decoded.prefix]!, program };
}

const base58 = base58check(sha256);

/** The P2PKH address (`1…` on mainnet, `m…`/`n…` on testnet) of a public key: base58check of its HASH160. */
export function p2pkhAddress(publicKey: Uint8Array, network: Network): string {
  const payload = new Uint8Array(21);
  payload[0] = P2PKH_VERSION[network];
  payload.set(ripemd160(sha256(publicKey)), 1);
  return base58.encode(payload);
}
