import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Logger } from '../core/log.js';
import { framedMessage } from './bitcoin.js';

/**
 * The curve step of an identity check (docs/api.md, "Identity-signed requests"), in two implementations that
 * give the same verdict for every input: libsecp256k1 through its native binding, and node:crypto (OpenSSL),
 * used where the binding did not build. The relay picks one at start-up (docs/operations.md).
 */

export type VerifierPath = 'libsecp256k1' | 'node:crypto';

export interface SignatureVerifier {
  readonly path: VerifierPath;
  /**
   * Whether `rs` (64 bytes, r ‖ s) is an ECDSA signature over secp256k1 of the BIP-137 digest of `message` by
   * `publicKey` (33 bytes, compressed). High-S is accepted: the apps' signatures are recoverable compact ones,
   * and replays are refused by the nonce, never by the signature's bytes.
   */
  verifyMessage(message: Uint8Array, rs: Uint8Array, publicKey: Uint8Array): boolean;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest();

/** SubjectPublicKeyInfo header of a compressed secp256k1 key (id-ecPublicKey, secp256k1, 33-byte BIT STRING). */
const SPKI_SECP256K1 = Buffer.from('3036301006072a8648ce3d020106052b8104000a032200', 'hex');

/**
 * Imported keys of recent signers: an app signs every write with the same key, and the import is a third of a
 * verification's cost. Bounded (oldest out first) since anyone can make valid pairs of their own.
 */
const KEY_CACHE_SIZE = 4096;
const importedKeys = new Map<string, KeyObject>();

function importKey(publicKey: Uint8Array): KeyObject {
  const id = Buffer.from(publicKey).toString('hex');
  let key = importedKeys.get(id);
  if (key === undefined) {
    key = createPublicKey({ key: Buffer.concat([SPKI_SECP256K1, publicKey]), format: 'der', type: 'spki' });
    if (importedKeys.size >= KEY_CACHE_SIZE) importedKeys.delete(importedKeys.keys().next().value!);
    importedKeys.set(id, key);
  }
  return key;
}

export const nodeCryptoVerifier: SignatureVerifier = {
  path: 'node:crypto',
  verifyMessage(message, rs, publicKey) {
    if (rs.length !== 64 || publicKey.length !== 33) return false;
    try {
      // node:crypto hashes what it verifies once more: SHA-256 of the framed message gives the BIP-137 digest.
      return verify(
        'sha256',
        sha256(framedMessage(message)),
        { key: importKey(publicKey), dsaEncoding: 'ieee-p1363' },
        rs,
      );
    } catch {
      // A public key off the curve.
      return false;
    }
  },
};

/** The part of the `secp256k1` package's binding the relay calls (its API.md). */
interface Secp256k1Binding {
  /** Throws when r or s is not below the curve order. */
  signatureNormalize(signature: Uint8Array): Uint8Array;
  /** Throws when the signature or the key does not parse (r or s not below the order, a key off the curve). */
  ecdsaVerify(signature: Uint8Array, digest: Uint8Array, publicKey: Uint8Array): boolean;
}

/**
 * libsecp256k1's verifier; throws when the native binding does not load. The package's main entry would fall
 * back to a JavaScript implementation: its `bindings` entry loads the addon or throws.
 */
export function nativeVerifier(): SignatureVerifier {
  const binding = createRequire(import.meta.url)('secp256k1/bindings') as Secp256k1Binding;
  return {
    path: 'libsecp256k1',
    verifyMessage(message, rs, publicKey) {
      if (rs.length !== 64 || publicKey.length !== 33) return false;
      try {
        // libsecp256k1 refuses high-S signatures: normalized (on a copy) first, as node:crypto accepts them.
        const lowS = binding.signatureNormalize(Uint8Array.from(rs));
        return binding.ecdsaVerify(lowS, sha256(sha256(framedMessage(message))), publicKey);
      } catch {
        return false;
      }
    },
  };
}

/** SIGNATURE_VERIFIER: `auto` takes libsecp256k1 where its binding loads, node:crypto elsewhere. */
export type VerifierSetting = 'auto' | VerifierPath;

export interface VerifierChoice {
  verifier: SignatureVerifier;
  /** Why node:crypto, when it is the one. */
  reason?: string;
  /** Whether it was meant to be libsecp256k1. */
  fallback: boolean;
}

/** The verifier of this process; a forced `libsecp256k1` whose binding does not load stops the start. */
export function chooseVerifier(setting: VerifierSetting): VerifierChoice {
  if (setting === 'node:crypto') {
    return { verifier: nodeCryptoVerifier, reason: 'SIGNATURE_VERIFIER=node:crypto', fallback: false };
  }
  try {
    return { verifier: nativeVerifier(), fallback: false };
  } catch (err) {
    const reason = `native binding not available: ${String((err as Error).message).split('\n')[0]}`;
    if (setting === 'libsecp256k1') {
      throw new Error(`SIGNATURE_VERIFIER=libsecp256k1: ${reason}`, { cause: err });
    }
    return { verifier: nodeCryptoVerifier, reason, fallback: true };
  }
}

/** The start-up line naming the path (docs/operations.md, "Signature verification"); a fallback warns. */
export function announceVerifier({ verifier, reason, fallback }: VerifierChoice, log: Logger): void {
  log[fallback ? 'warn' : 'info']('signature verification', {
    path: verifier.path,
    ...(reason === undefined ? {} : { reason }),
  });
}
