/**
 * CPU per identity verification, in this process: the relay's checks end to end on each of its two curve steps
 * (libsecp256k1, node:crypto), the curve step alone on each and with @noble/curves, and the junk a stranger can
 * send for a public identity. Reported by `npm run bench -- --phases verify`; see
 * docs/benchmarks.md.
 */
import { createPublicKey, createHash, verify as nodeVerify, type KeyObject } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { framedMessage, signedMessageDigest } from '../src/identity/bitcoin.js';
import { nativeVerifier, nodeCryptoVerifier } from '../src/identity/signature.js';
import { verifyCredential } from '../src/identity/verify.js';
import { dataOf, PAIR, publicKeyOf, signed, STRANGER_PRIVATE, OTHER_PAIR } from '../test/helpers/signing.js';
import type { Phase } from './phase.js';

/** SubjectPublicKeyInfo of a compressed secp256k1 key: the fixed DER header, then the 33 bytes. */
const SPKI_SECP256K1 = Buffer.from('3036301006072a8648ce3d020106052b8104000a032200', 'hex');

function nodeKey(publicKeyHex: string): KeyObject {
  return createPublicKey({
    key: Buffer.concat([SPKI_SECP256K1, Buffer.from(publicKeyHex, 'hex')]),
    format: 'der',
    type: 'spki',
  });
}

/** Median µs per call over `batches` batches of `perBatch` calls. */
export function timeIt(fn: () => unknown, perBatch: number, batches = 7): number {
  for (let i = 0; i < perBatch; i++) fn();
  const times: number[] = [];
  for (let b = 0; b < batches; b++) {
    const start = performance.now();
    for (let i = 0; i < perBatch; i++) fn();
    times.push(((performance.now() - start) * 1000) / perBatch);
  }
  times.sort((x, y) => x - y);
  return Math.round(times[Math.floor(times.length / 2)]! * 10) / 10;
}

export interface VerifyFigures {
  /** verifyCredential on a signed 10 KB tx: every check, libsecp256k1 for the curve. */
  relayChecksLibsecp256k1: number;
  /** The same, node:crypto for the curve (the fallback). */
  relayChecksNodeCrypto: number;
  /** The relay's curve step (framing, hash, verify) with libsecp256k1's native binding. */
  curveLibsecp256k1: number;
  /** The same with node:crypto, for a signer whose key it imported before. */
  curveNodeCrypto: number;
  /** The curve step alone, with @noble/curves 2 (JavaScript). */
  curveNoble: number;
  /** node:crypto: the key imported per request (it differs per pair), then crypto.verify. */
  curveNodeImportAndVerify: number;
  /** node:crypto with the KeyObject already made (a lower bound: a relay cannot cache every pair's key). */
  curveNodeVerifyOnly: number;
  /** A stranger's junk for a public identity (random signature, invented script): refused at check 7. */
  junk: number;
}

export function verifyFigures(): VerifyFigures {
  const now = Date.now();
  const tx = {
    chain: 'btc',
    wkIdentity: PAIR.wkIdentity,
    action: 'tx',
    payload: '0a'.repeat(5 * 1024),
    path: '0-0',
  };
  const body = signed(tx, { purpose: 'action', timestamp: now });
  const request = { purpose: 'action' as const, location: 'body' as const, body };
  const native = nativeVerifier();
  for (const verifier of [native, nodeCryptoVerifier]) {
    if (!verifyCredential(request, verifier, now, 600_000).ok)
      throw new Error('the benchmark body does not verify');
  }

  const signature = Buffer.from(body.signature, 'base64');
  const digest = signedMessageDigest(Buffer.from(body.message));
  // node:crypto hashes what it verifies: given SHA-256 of the framed message, it verifies the double hash.
  const singleSha = createHash('sha256')
    .update(framedMessage(Buffer.from(body.message)))
    .digest();
  const rs = signature.subarray(1);
  const key = nodeKey(body.publicKey);
  const nodeOk = () => nodeVerify('sha256', singleSha, { key, dsaEncoding: 'ieee-p1363' }, rs);
  const publicKey = Buffer.from(body.publicKey, 'hex');
  const message = Buffer.from(body.message);
  const nobleOk = () => secp256k1.verify(rs, digest, publicKey, { prehash: false, lowS: false });
  if (!nodeOk() || !nobleOk() || !native.verifyMessage(message, rs, publicKey)) {
    throw new Error('the curve step does not verify');
  }
  const junk = {
    ...tx,
    signature: Buffer.concat([Buffer.of(31), Buffer.alloc(64, 7)]).toString('base64'),
    message: JSON.stringify({
      timestamp: now,
      action: 'action',
      identity: PAIR.wkIdentity,
      nonce: 'cd'.repeat(32),
      data: dataOf(tx),
    }),
    publicKey: publicKeyOf(STRANGER_PRIVATE),
    witnessScript: OTHER_PAIR.witnessScript,
  };
  const junkRequest = { purpose: 'action' as const, location: 'body' as const, body: junk };
  if (verifyCredential(junkRequest, native, now, 600_000).ok) throw new Error('junk verified');

  return {
    relayChecksLibsecp256k1: timeIt(() => verifyCredential(request, native, now, 600_000), 300),
    relayChecksNodeCrypto: timeIt(() => verifyCredential(request, nodeCryptoVerifier, now, 600_000), 300),
    curveLibsecp256k1: timeIt(() => native.verifyMessage(message, rs, publicKey), 300),
    curveNodeCrypto: timeIt(() => nodeCryptoVerifier.verifyMessage(message, rs, publicKey), 300),
    curveNoble: timeIt(nobleOk, 300),
    curveNodeImportAndVerify: timeIt(
      () => nodeVerify('sha256', singleSha, { key: nodeKey(body.publicKey), dsaEncoding: 'ieee-p1363' }, rs),
      300,
    ),
    curveNodeVerifyOnly: timeIt(nodeOk, 300),
    junk: timeIt(() => verifyCredential(junkRequest, native, now, 600_000), 3000),
  };
}

export const verify: Phase<VerifyFigures> = {
  name: 'verify',
  key: 'verify',
  async run({ out }) {
    const figures = verifyFigures();
    out('one identity verification, µs of CPU (median of batches, in the benchmark process):');
    for (const [name, us] of Object.entries(figures)) out(`  ${name.padEnd(26)} ${us}`);
    out();
    return figures;
  },
};
