import { expect } from 'chai';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { createLogger } from '../../src/core/log.js';
import {
  announceVerifier,
  chooseVerifier,
  nodeCryptoVerifier,
  type SignatureVerifier,
  type VerifierSetting,
} from '../../src/identity/signature.js';
import {
  KEY_PRIVATE,
  publicKeyOf,
  signMessage,
  VECTOR,
  vectorBody,
  WALLET_PRIVATE,
} from '../helpers/signing.js';
import { VERIFIER_PATHS, verifierFor } from '../helpers/verifiers.js';

const { n: N, p: P } = secp256k1.Point.CURVE();
const scalar = (value: bigint) => Buffer.from(value.toString(16).padStart(64, '0'), 'hex');

const MESSAGE = Buffer.from(vectorBody().message as string);
const RS = Buffer.from(VECTOR.signature, 'base64').subarray(1);
const KEY = Buffer.from(VECTOR.publicKey, 'hex');
const R = RS.subarray(0, 32);
const S = BigInt('0x' + RS.subarray(32).toString('hex'));

/** The first x whose x³ + 7 has no square root mod p: `02‖x` is no point of the curve. */
const OFF_CURVE_X = (() => {
  for (let x = 1n; ; x++) {
    try {
      secp256k1.Point.fromHex('02' + scalar(x).toString('hex'));
    } catch {
      return scalar(x);
    }
  }
})();

/** [name, message, r ‖ s, public key, verdict] for the curve step alone. */
const VECTORS: [string, Uint8Array, Uint8Array, Uint8Array, boolean][] = [
  ['the reference vector', MESSAGE, RS, KEY, true],
  ['its high-S twin (n − s)', MESSAGE, Buffer.concat([R, scalar(N - S)]), KEY, true],
  [
    'the key app’s signature of the same message',
    MESSAGE,
    Buffer.from(signMessage(MESSAGE.toString(), KEY_PRIVATE), 'base64').subarray(1),
    Buffer.from(publicKeyOf(KEY_PRIVATE), 'hex'),
    true,
  ],
  ['a tampered message', Buffer.concat([MESSAGE, Buffer.from(' ')]), RS, KEY, false],
  ['the other key of the pair', MESSAGE, RS, Buffer.from(publicKeyOf(KEY_PRIVATE), 'hex'), false],
  ['s = 0', MESSAGE, Buffer.concat([R, scalar(0n)]), KEY, false],
  ['r = 0', MESSAGE, Buffer.concat([scalar(0n), RS.subarray(32)]), KEY, false],
  ['s = n', MESSAGE, Buffer.concat([R, scalar(N)]), KEY, false],
  ['r = n', MESSAGE, Buffer.concat([scalar(N), RS.subarray(32)]), KEY, false],
  ['a stranger’s junk (64 bytes of 7)', MESSAGE, Buffer.alloc(64, 7), KEY, false],
  ['a key off the curve', MESSAGE, RS, Buffer.concat([Buffer.of(2), OFF_CURVE_X]), false],
  ['a key whose x is p', MESSAGE, RS, Buffer.concat([Buffer.of(2), scalar(P)]), false],
  ['a 33-byte key with prefix 04', MESSAGE, RS, Buffer.concat([Buffer.of(4), KEY.subarray(1)]), false],
  [
    'the same key uncompressed (65 bytes)',
    MESSAGE,
    RS,
    Buffer.from(secp256k1.getPublicKey(WALLET_PRIVATE, false)),
    false,
  ],
  ['a 63-byte signature', MESSAGE, RS.subarray(0, 63), KEY, false],
  ['a 65-byte signature', MESSAGE, Buffer.concat([RS, Buffer.of(0)]), KEY, false],
];

for (const path of VERIFIER_PATHS) {
  describe(`the curve step on ${path}`, () => {
    let verifier: SignatureVerifier;
    before(function () {
      verifier = verifierFor(path, this);
    });

    it(`is the ${path} verifier`, () => expect(verifier.path).to.equal(path));

    for (const [name, message, rs, key, verdict] of VECTORS) {
      it(`${name}: ${verdict ? 'verifies' : 'refused'}`, () => {
        expect(verifier.verifyMessage(message, rs, key)).to.equal(verdict);
      });
    }

    it('leaves the signature it was given as it was (a high-S one too)', () => {
      const highS = Buffer.concat([R, scalar(N - S)]);
      const copy = Buffer.from(highS);
      expect(verifier.verifyMessage(MESSAGE, highS, KEY)).to.equal(true);
      expect(highS.equals(copy)).to.equal(true);
    });
  });
}

describe('the two curve steps agree', () => {
  let native: SignatureVerifier;
  before(function () {
    native = verifierFor('libsecp256k1', this);
  });

  it('on every one-byte change of the signature, the key and the message', () => {
    const cases: [Uint8Array, Uint8Array, Uint8Array][] = [];
    for (let i = 0; i < RS.length; i++) {
      const rs = Buffer.from(RS);
      rs[i]! ^= 1 << (i % 8);
      cases.push([MESSAGE, rs, KEY]);
    }
    for (let i = 0; i < KEY.length; i++) {
      const key = Buffer.from(KEY);
      key[i]! ^= 1 << (i % 8);
      cases.push([MESSAGE, RS, key]);
    }
    for (let i = 0; i < MESSAGE.length; i += 7) {
      const message = Buffer.from(MESSAGE);
      message[i]! ^= 1;
      cases.push([message, RS, KEY]);
    }
    const verdicts = cases.map((args) => [
      native.verifyMessage(...args),
      nodeCryptoVerifier.verifyMessage(...args),
    ]);
    expect(verdicts.filter(([a, b]) => a !== b)).to.deep.equal([]);
    // Flipping bit 0 of the key's prefix (02 → 03) names the point's mirror: refused too, as every other change.
    expect(verdicts.every(([a]) => a === false)).to.equal(true);
  });
});

describe('the verifier a process chooses at start-up, and its one line', () => {
  function choose(setting: VerifierSetting) {
    const lines: Record<string, unknown>[] = [];
    const choice = chooseVerifier(setting);
    announceVerifier(
      choice,
      createLogger('info', {}, (line) => lines.push(JSON.parse(line) as Record<string, unknown>)),
    );
    return { path: choice.verifier.path, lines: lines.map(({ time: _, ...line }) => line) };
  }

  it('auto: libsecp256k1 where its binding loads', function () {
    verifierFor('libsecp256k1', this);
    expect(choose('auto')).to.deep.equal({
      path: 'libsecp256k1',
      lines: [{ level: 'info', msg: 'signature verification', path: 'libsecp256k1' }],
    });
  });

  it('SIGNATURE_VERIFIER=node:crypto: node:crypto, saying why', () => {
    expect(choose('node:crypto')).to.deep.equal({
      path: 'node:crypto',
      lines: [
        {
          level: 'info',
          msg: 'signature verification',
          path: 'node:crypto',
          reason: 'SIGNATURE_VERIFIER=node:crypto',
        },
      ],
    });
  });

  it('a fallback is a warning naming why the binding did not load', () => {
    const lines: Record<string, unknown>[] = [];
    const reason = 'native binding not available: No native build was found';
    announceVerifier(
      { verifier: nodeCryptoVerifier, reason, fallback: true },
      createLogger('info', {}, (line) => lines.push(JSON.parse(line) as Record<string, unknown>)),
    );
    expect(lines.map(({ time: _, ...line }) => line)).to.deep.equal([
      { level: 'warn', msg: 'signature verification', path: 'node:crypto', reason },
    ]);
  });
});
