import { expect } from 'chai';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import type { AuthRoute } from '../../src/core/signed-routes.js';
import { bodyDigest, verifyCredential, type SignedRequest } from '../../src/identity/verify.js';
import {
  OTHER_PAIR,
  PAIR,
  VECTOR,
  vectorBody,
  STRANGER_PRIVATE,
  dataOf,
  publicKeyOf,
  signMessage,
  signed,
  type SignOptions,
} from '../helpers/signing.js';
import { VERIFIER_PATHS, verifierFor } from '../helpers/verifiers.js';
import type { SignatureVerifier } from '../../src/identity/signature.js';

const WINDOW_MS = 600_000;
const NOW = Date.now();

const TX = { action: 'tx', payload: 'deadbeef', chain: 'btc', path: '0-0', wkIdentity: PAIR.wkIdentity };

/** The verification path of the describe block running. */
let verifier: SignatureVerifier;

function check(body: Record<string, unknown>, purpose: AuthRoute = 'action', nowMs = NOW) {
  const request: SignedRequest = { purpose, location: 'body', body };
  return verifyCredential(request, verifier, nowMs, WINDOW_MS);
}

function refusedAt(result: ReturnType<typeof check>, field: string, code = 'AUTH_INVALID') {
  expect(result.ok, JSON.stringify(result)).to.equal(false);
  if (result.ok) return;
  expect({ code: result.code, field: result.field }).to.deep.equal({ code, field });
}

const sign = (body: object, options: Partial<SignOptions> = {}) =>
  signed(body, { purpose: 'action', ...options }) as Record<string, unknown>;

/** Replaces the message with one built from `fields` and signs it properly, so only those fields are wrong. */
function withMessage(body: Record<string, unknown>, fields: Record<string, unknown>, text?: string) {
  const message = text ?? JSON.stringify({ ...JSON.parse(body.message as string), ...fields });
  return { ...body, message, signature: signMessage(message, PAIR.walletPrivate) };
}

for (const path of VERIFIER_PATHS) {
  describe(`identity checks (pure), the curve step on ${path}`, () => {
    before(function () {
      verifier = verifierFor(path, this);
    });

    it('the reference vector verifies byte for byte at its timestamp', () => {
      const body = vectorBody();
      expect(bodyDigest(body)).to.equal(VECTOR.data);
      expect(check(body, 'action', VECTOR.now)).to.deep.equal({
        ok: true,
        wkIdentity: VECTOR.wkIdentity,
        nonce: 'ab'.repeat(32),
        timestamp: VECTOR.now,
      });
      // The test signer (the apps' signing, deterministic) reproduces the vector's signature exactly.
      expect(signMessage(body.message as string, PAIR.walletPrivate)).to.equal(VECTOR.signature);
      expect(PAIR).to.include({
        wkIdentity: VECTOR.wkIdentity,
        witnessScript: VECTOR.witnessScript,
        walletIdentity: VECTOR.walletIdentity,
      });
    });

    it('the reference vector is refused a window later, and as a sync or on another route', () => {
      refusedAt(
        check(vectorBody(), 'action', VECTOR.now + WINDOW_MS + 1),
        '/body/message/timestamp',
        'AUTH_EXPIRED',
      );
      expect(check(vectorBody(), 'action', VECTOR.now + WINDOW_MS).ok).to.equal(true);
      refusedAt(check(vectorBody(), 'token', VECTOR.now), '/body/message/action');
    });

    it('a message signed by either key of the pair verifies; so does a high-S signature', () => {
      expect(check(sign(TX, { by: 'key' })).ok).to.equal(true);
      const body = sign(TX);
      const bytes = Buffer.from(body.signature as string, 'base64');
      const s = BigInt('0x' + bytes.subarray(33).toString('hex'));
      const highS = secp256k1.Point.CURVE().n - s;
      bytes.set(Buffer.from(highS.toString(16).padStart(64, '0'), 'hex'), 33);
      bytes[0] = 31 + ((bytes[0]! - 31) ^ 1);
      expect(check({ ...body, signature: bytes.toString('base64') }).ok).to.equal(true);
    });

    describe('each check refuses with its field', () => {
      const cases: [string, () => Record<string, unknown>, string, string?][] = [
        [
          '1: signature not base64 of 65 bytes',
          () => ({ ...sign(TX), signature: 'AAAA' }),
          '/body/signature',
        ],
        [
          '1: signature for an uncompressed key (header 27)',
          () => {
            const bytes = Buffer.from(sign(TX).signature as string, 'base64');
            bytes[0] = 27;
            return { ...sign(TX), signature: bytes.toString('base64') };
          },
          '/body/signature',
        ],
        ['1: message not a string', () => ({ ...sign(TX), message: { timestamp: 1 } }), '/body/message'],
        ['1: message over 1,024 bytes', () => ({ ...sign(TX), message: 'x'.repeat(1025) }), '/body/message'],
        [
          '1: publicKey uncompressed',
          () => ({ ...sign(TX), publicKey: '04' + 'a'.repeat(128) }),
          '/body/publicKey',
        ],
        [
          '1: witnessScript missing',
          () => {
            const { witnessScript: _, ...rest } = sign(TX);
            return rest;
          },
          '/body/witnessScript',
        ],
        ['2: message not JSON', () => withMessage(sign(TX), {}, 'not json'), '/body/message'],
        ['2: message with an extra field', () => withMessage(sign(TX), { extra: 1 }), '/body/message'],
        [
          '2: timestamp not an integer',
          () => withMessage(sign(TX), { timestamp: String(NOW) }),
          '/body/message/timestamp',
        ],
        ['2: nonce not 64 hex', () => withMessage(sign(TX), { nonce: 'ab' }), '/body/message/nonce'],
        [
          '3: from the future',
          () => sign(TX, { timestamp: NOW + WINDOW_MS + 1 }),
          '/body/message/timestamp',
          'AUTH_EXPIRED',
        ],
        [
          '3: from the past',
          () => sign(TX, { timestamp: NOW - WINDOW_MS - 1 }),
          '/body/message/timestamp',
          'AUTH_EXPIRED',
        ],
        [
          '4: identity of another pair',
          () => sign(TX, { identity: OTHER_PAIR.wkIdentity }),
          '/body/message/identity',
        ],
        [
          '4: body for another pair',
          () => sign({ ...TX, wkIdentity: OTHER_PAIR.wkIdentity }, { identity: PAIR.wkIdentity }),
          '/body/message/identity',
        ],
        ['5: signed for another purpose', () => sign(TX, { purpose: 'join' }), '/body/message/action'],
        [
          '6: not a 2-of-2 script (1-of-2)',
          () => ({ ...sign(TX), witnessScript: '51' + PAIR.witnessScript.slice(2) }),
          '/body/witnessScript',
        ],
        [
          '7: the script of another pair',
          () => ({ ...sign(TX), witnessScript: OTHER_PAIR.witnessScript }),
          '/body/witnessScript',
        ],
        [
          '8: a key outside the script',
          () => sign(TX, { privateKey: STRANGER_PRIVATE, publicKey: publicKeyOf(STRANGER_PRIVATE) }),
          '/body/publicKey',
        ],
        [
          '9: the body changed after signing',
          () => ({ ...sign(TX), payload: 'deadbeee' }),
          '/body/message/data',
        ],
        [
          '9: the body’s keys reordered after signing',
          () => {
            const { action, ...rest } = sign(TX);
            return { ...rest, action };
          },
          '/body/message/data',
        ],
        [
          '10: signed by the other key than publicKey names',
          () => sign(TX, { privateKey: PAIR.keyPrivate, publicKey: publicKeyOf(PAIR.walletPrivate) }),
          '/body/signature',
        ],
        [
          '10: a stranger’s signature naming a key of the pair',
          () => sign(TX, { privateKey: STRANGER_PRIVATE }),
          '/body/signature',
        ],
      ];
      for (const [name, body, field, code] of cases) {
        it(name, () => refusedAt(check(body()), field, code));
      }

      it('11: a signed sync for a walletIdentity that is not a key of the pair', () => {
        const sync = {
          chain: 'btc',
          walletIdentity: OTHER_PAIR.walletIdentity,
          keyXpub: 'xpub1',
          wkIdentity: PAIR.wkIdentity,
        };
        refusedAt(check(signed(sync, { purpose: 'sync', by: 'key' }), 'sync'), '/body/walletIdentity');
        expect(
          check(
            signed({ ...sync, walletIdentity: PAIR.walletIdentity }, { purpose: 'sync', by: 'key' }),
            'sync',
          ).ok,
        ).to.equal(true);
        expect(
          check(signed({ ...sync, walletIdentity: PAIR.keyIdentity }, { purpose: 'sync', by: 'key' }), 'sync')
            .ok,
        ).to.equal(true);
      });

      it('a join names its fields under /event', () => {
        const join = signed({ wkIdentity: PAIR.wkIdentity }, { purpose: 'join' });
        expect(
          verifyCredential({ purpose: 'join', location: 'event', body: join }, verifier, NOW, WINDOW_MS).ok,
        ).to.equal(true);
        const forged = { ...join, publicKey: publicKeyOf(STRANGER_PRIVATE) };
        expect(
          verifyCredential({ purpose: 'join', location: 'event', body: forged }, verifier, NOW, WINDOW_MS),
        ).to.include({
          field: '/event/publicKey',
        });
      });
    });

    it('junk for a public identity stops at the script, before any curve arithmetic', () => {
      // A stranger knows the address, never the script: a random signature and any script it can invent.
      const junk = {
        ...TX,
        signature: Buffer.concat([Buffer.of(31), Buffer.alloc(64, 7)]).toString('base64'),
        message: JSON.stringify({
          timestamp: NOW,
          action: 'action',
          identity: PAIR.wkIdentity,
          nonce: 'cd'.repeat(32),
          data: dataOf(TX),
        }),
        publicKey: publicKeyOf(STRANGER_PRIVATE),
        witnessScript: `5221${publicKeyOf(STRANGER_PRIVATE)}21${publicKeyOf(OTHER_PAIR.keyPrivate)}52ae`,
      };
      expect(check(junk)).to.include({ reason: 'script', field: '/body/witnessScript' });
    });
  });
}
