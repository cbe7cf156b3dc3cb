import { spawn, spawnSync } from 'node:child_process';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sha256 } from '@noble/hashes/sha2.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { base58check } from '@scure/base';
import { expect } from 'chai';
import {
  signBody,
  signWalletBody,
  witnessScriptOf,
  wkIdentityOf,
  type PairKeys,
} from '../../client/index.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { p2pkhAddress } from '../../src/identity/bitcoin.js';
import { get, post, startTestApi, type TestApi } from '../helpers/api.js';
import { redis } from '../helpers/redis.js';
import {
  KEY_PRIVATE,
  PAIR,
  publicKeyOf,
  VECTOR,
  VECTOR_REQUEST,
  vectorBody,
  WALLET_PRIVATE,
} from '../helpers/signing.js';

/**
 * The Python reference for the apps' signature (client/examples/sign_body.py, docs/api.md#signing-in-python): the
 * reference vector, the TypeScript signer's output for the same key and message, and signed requests a relay that
 * requires signatures accepts. It runs wherever a python3 imports ecdsa (Debian's python3-ecdsa); in CI it must.
 */

const SCRIPT = fileURLToPath(new URL('../../client/examples/sign_body.py', import.meta.url));
const keys = keysFor('relay:');
const WALLET_PUBLIC = publicKeyOf(WALLET_PRIVATE);
const KEY_PUBLIC = publicKeyOf(KEY_PRIVATE);

/** The first interpreter that imports ecdsa: `python3` on PATH, then Debian's own. */
const python = ['python3', '/usr/bin/python3'].find(
  (candidate) => spawnSync(candidate, ['-c', 'import ecdsa'], { stdio: 'ignore' }).status === 0,
);

/** stdout of `python3 ...args` with `input` on stdin; fails on a non-zero exit or anything on stderr. */
function runPython(args: string[], input = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(python!, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let [stdout, stderr] = ['', ''];
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 && stderr === ''
        ? resolve(stdout.trimEnd())
        : reject(new Error(`python3 ${args.join(' ')} exited ${code}: ${stderr}${stdout}`)),
    );
    child.stdin.end(input);
  });
}

/** sign_body.py run as a command. */
const run = (args: string[], input = '') => runPython([SCRIPT, ...args], input);

/** `code` run with sign_body.py importable, as a program that uses it as a library. */
const runWithModule = (code: string, input = '') =>
  runPython(['-c', `import sys; sys.path.insert(0, sys.argv[1])\n${code}`, dirname(SCRIPT)], input);

/** The request Python signs for `body`: the body's bytes, then the four fields. */
const pythonSigned = (body: object, by: 'wallet' | 'key', purpose: string, extra: string[] = []) =>
  run(
    [
      'sign',
      '--key',
      (by === 'wallet' ? WALLET_PRIVATE : KEY_PRIVATE).toString('hex'),
      '--other-public-key',
      by === 'wallet' ? KEY_PUBLIC : WALLET_PUBLIC,
      '--purpose',
      purpose,
      ...extra,
    ],
    JSON.stringify(body),
  );

const wifOf = (privateKey: Uint8Array) =>
  base58check(sha256).encode(Uint8Array.from([0x80, ...privateKey, 0x01]));

describe('the Python signing reference (client/examples/sign_body.py)', function () {
  before(function () {
    if (python) return;
    if (process.env.CI)
      throw new Error('no python3 here imports ecdsa: .ci/run installs python3-ecdsa for CI');
    this.skip();
  });

  it('signs the reference vector byte for byte, from a hex key and from its WIF', async () => {
    const vector = ['--timestamp', String(VECTOR.now), '--nonce', 'ab'.repeat(32)];
    expect(await pythonSigned(VECTOR_REQUEST, 'wallet', 'action', vector)).to.equal(
      JSON.stringify(vectorBody()),
    );
    const { signature, message, publicKey, witnessScript } = vectorBody();
    const fromWif = await run(
      [
        'sign',
        '--key',
        wifOf(WALLET_PRIVATE),
        '--other-public-key',
        KEY_PUBLIC,
        '--purpose',
        'action',
        '--fields',
      ].concat(vector),
      JSON.stringify(VECTOR_REQUEST),
    );
    expect(JSON.parse(fromWif)).to.deep.equal({ signature, message, publicKey, witnessScript });
  });

  it('gives the TypeScript signer’s credential for the same key, body and message: both keys, both recovery ids', async () => {
    const walletKeys: PairKeys = {
      privateKey: WALLET_PRIVATE,
      walletPublicKey: WALLET_PUBLIC,
      keyPublicKey: KEY_PUBLIC,
    };
    const cases = Array.from({ length: 8 }, (_, i) => ({
      by: i % 2 === 0 ? ('wallet' as const) : ('key' as const),
      body: {
        chain: 'btc',
        wkIdentity: PAIR.wkIdentity,
        action: 'tx',
        payload: `é${i}`.repeat(i + 1),
        n: i / 3,
      },
      timestamp: VECTOR.now + i,
      nonce: i.toString(16).padStart(2, '0').repeat(32),
    }));
    const headers = new Set<number>();
    await Promise.all(
      cases.map(async ({ by, body, timestamp, nonce }) => {
        const fields = ['--timestamp', String(timestamp), '--nonce', nonce, '--fields'];
        const python = JSON.parse(await pythonSigned(body, by, 'token', fields));
        const privateKey = by === 'wallet' ? WALLET_PRIVATE : KEY_PRIVATE;
        expect(python).to.deep.equal(
          signBody(body, 'token', { ...walletKeys, privateKey }, { timestamp, nonce }),
        );
        headers.add(Buffer.from(python.signature, 'base64')[0]!);
      }),
    );
    expect([...headers].sort()).to.deep.equal([31, 32]);
  });

  it('signs a session challenge (purpose session, the challenge its nonce) as the TypeScript signer: a pair’s four fields, a wallet key’s three', async () => {
    const challenge = 'c3'.repeat(32);
    const timestamp = ['--timestamp', String(VECTOR.now), '--fields'];
    const pairBody = { wkIdentity: PAIR.wkIdentity, side: 'key', challenge };
    const keyKeys: PairKeys = {
      privateKey: KEY_PRIVATE,
      walletPublicKey: WALLET_PUBLIC,
      keyPublicKey: KEY_PUBLIC,
    };
    expect(JSON.parse(await pythonSigned(pairBody, 'key', 'session', timestamp))).to.deep.equal(
      signBody(pairBody, 'session', keyKeys, { timestamp: VECTOR.now, nonce: challenge }),
    );
    const walletBody = { walletIdentity: PAIR.walletIdentity, challenge };
    const walletSigned = await run(
      ['sign', '--key', WALLET_PRIVATE.toString('hex'), '--purpose', 'session', ...timestamp],
      JSON.stringify(walletBody),
    );
    expect(JSON.parse(walletSigned)).to.deep.equal(
      signWalletBody(walletBody, 'session', WALLET_PRIVATE, { timestamp: VECTOR.now, nonce: challenge }),
    );
    expect(Object.keys(JSON.parse(walletSigned))).to.deep.equal(['signature', 'message', 'publicKey']);
  });

  it('writes the signed message’s length as Bitcoin’s varint: a real message always in the 3-byte 0xfd form', async () => {
    const lengths = [0, 252, 253, 270, 1024, 0xffff, 0x10000, 2 ** 32];
    const hex = await runWithModule(
      `from sign_body import varint\nfor n in (${lengths.join(', ')}): print(varint(n).hex())`,
    );
    expect(hex.split('\n')).to.deep.equal([
      '00',
      'fc',
      'fdfd00',
      'fd0e01',
      'fd0004',
      'fdffff',
      'fe00000100',
      'ff0000000001000000',
    ]);
    const message = JSON.parse(await pythonSigned(VECTOR_REQUEST, 'wallet', 'action')).message as string;
    expect(Buffer.byteLength(message)).to.be.within(253, 1024);
  });

  it('keygen and pair give the keys, the P2PKH address, the script and the wkIdentity the TypeScript code derives', async () => {
    const [a, b] = await Promise.all([run(['keygen']), run(['keygen', '--testnet'])]).then((out) =>
      out.map((text) => JSON.parse(text)),
    );
    for (const [key, network] of [
      [a, 'mainnet'],
      [b, 'testnet'],
    ] as const) {
      const privateKey = Buffer.from(key.privateKey, 'hex');
      expect(key).to.deep.equal({
        privateKey: key.privateKey,
        wif: base58check(sha256).encode(
          Uint8Array.from([network === 'mainnet' ? 0x80 : 0xef, ...privateKey, 1]),
        ),
        publicKey: publicKeyOf(privateKey),
        address: p2pkhAddress(secp256k1.getPublicKey(privateKey, true), network),
      });
    }
    expect(JSON.parse(await run(['pair', a.publicKey, b.publicKey, '--testnet']))).to.deep.equal({
      witnessScript: witnessScriptOf(a.publicKey, b.publicKey),
      wkIdentity: wkIdentityOf(b.publicKey, a.publicKey, 'tb'),
    });
  });

  describe('against a relay that requires signatures (AUTH_MODE=required)', () => {
    let api: TestApi;
    before(async () => {
      // A sync cannot be required (no key app signs one yet); a signed one is checked all the same.
      api = await startTestApi({ AUTH_MODE: 'required', AUTH_ROUTES: 'sync=optional' });
    });
    after(() => api?.stop());

    const nonceOf = (request: string) => JSON.parse(JSON.parse(request).message).nonce as string;
    const tx = { chain: 'btc', wkIdentity: PAIR.wkIdentity, action: 'tx', payload: 'deadbeef', path: '0-0' };
    /** What the relay adds to the body: the times, and the record's place in the pair's stream. */
    const stampsOf = (record: { createdAt: string; expiresAt: string; epoch: string; offset: number }) => {
      expect(record.epoch).to.match(/^[A-Za-z0-9_-]{8,32}$/);
      const { createdAt, expiresAt, epoch, offset } = record;
      return { createdAt, expiresAt, epoch, offset };
    };
    const stored = async (key: string) => JSON.parse((await redis().get(key))!);

    it('a sync the key app signs, a request the wallet signs and the reply the key app signs: 200, and Redis holds each', async () => {
      const sync = {
        chain: 'btc',
        walletIdentity: PAIR.walletIdentity,
        keyXpub: `xpub${'K'.repeat(107)}`,
        wkIdentity: PAIR.wkIdentity,
      };
      const signedSync = await pythonSigned(sync, 'key', 'sync');
      const synced = await post(api.url, '/v1/sync', signedSync);
      expect(synced.body).to.deep.equal({ success: true, data: sync });
      expect(await stored(keys.sync(PAIR.walletIdentity))).to.deep.equal(sync);
      expect(await redis().exists(keys.authNonce(PAIR.wkIdentity, nonceOf(signedSync)))).to.equal(1);

      // A chain the relay does not know takes any payload: é and / as the relay hashes them.
      const unicode = {
        chain: 'testchain',
        wkIdentity: PAIR.wkIdentity,
        action: 'tx',
        payload: 'café / 1.0',
        path: '0-0',
      };
      const request = await post(api.url, '/v1/action', await pythonSigned(unicode, 'wallet', 'action'));
      expect(request.status, request.text).to.equal(200);
      expect(request.body.data).to.deep.equal({
        id: request.body.data.id,
        ...unicode,
        ...stampsOf(request.body.data),
      });
      expect(request.body.data.offset).to.equal(1);
      expect(await stored(keys.action(PAIR.wkIdentity))).to.deep.equal(request.body.data);

      const txid = { chain: 'btc', wkIdentity: PAIR.wkIdentity, action: 'txid', payload: 'cd'.repeat(32) };
      const reply = await post(api.url, '/v1/action', await pythonSigned(txid, 'key', 'action'));
      expect(reply.status, reply.text).to.equal(200);
      expect(reply.body.data).to.deep.equal({
        id: reply.body.data.id,
        ...txid,
        ...stampsOf(reply.body.data),
      });
      expect(reply.body.data.offset).to.equal(1);
      expect(await stored(keys.action(PAIR.wkIdentity))).to.deep.equal(reply.body.data);
    });

    it('a body changed after Python signed it is 401 AUTH_INVALID on its data, an unsigned one AUTH_REQUIRED; Redis keeps the record', async () => {
      const before = await redis().get(keys.action(PAIR.wkIdentity));
      const signed = await pythonSigned(tx, 'wallet', 'action');
      const tampered = await post(api.url, '/v1/action', signed.replace('"deadbeef"', '"deadbeee"'));
      expect([tampered.status, tampered.body.error.code, tampered.body.error.details]).to.deep.equal([
        401,
        'AUTH_INVALID',
        [{ field: '/body/message/data', message: tampered.body.error.details[0].message }],
      ]);
      const unsigned = await post(api.url, '/v1/action', tx);
      expect([unsigned.status, unsigned.body.error.code]).to.deep.equal([401, 'AUTH_REQUIRED']);
      expect(await redis().get(keys.action(PAIR.wkIdentity))).to.equal(before);
      expect(await redis().exists(keys.authNonce(PAIR.wkIdentity, nonceOf(signed)))).to.equal(0);
    });

    it('a signature over a 1-byte length prefix (what a library writes below 253 bytes) is 401 on the signature', async () => {
      const before = await redis().get(keys.action(PAIR.wkIdentity));
      const oneByte = await runWithModule(
        `import json, sign_body
sign_body.varint = lambda length: bytes([length % 256])
body = json.loads(sys.stdin.read())
key = sign_body.private_key_of("${WALLET_PRIVATE.toString('hex')}")
print(sign_body.signed_request(body, sign_body.sign_body(body, "action", key, bytes.fromhex("${KEY_PUBLIC}"))).decode())`,
        JSON.stringify(tx),
      );
      const refused = await post(api.url, '/v1/action', oneByte);
      expect([refused.status, refused.body.error.code, refused.body.error.details[0].field]).to.deep.equal([
        401,
        'AUTH_INVALID',
        '/body/signature',
      ]);
      expect(await redis().get(keys.action(PAIR.wkIdentity))).to.equal(before);
    });

    it('the demo (no arguments) makes a new pair and its signed request, which the relay stores', async () => {
      const output = await run(['--relay', api.url]);
      const line = (name: string) => output.match(new RegExp(`^${name}: +(.*)$`, 'm'))?.[1];
      const wkIdentity = line('wkIdentity')!;
      expect(line('message bytes')).to.match(/^2\d\d \(varint fd[0-9a-f]{2}01\)$/);
      const answer = line('POST /v1/action')!.match(/^(\d+) (.*)$/)!;
      expect(answer[1]).to.equal('200');
      const { data } = JSON.parse(answer[2]!);
      expect(data).to.include({ chain: 'btc', wkIdentity, action: 'tx', payload: 'deadbeef', path: '0-0' });
      expect(await stored(keys.action(wkIdentity))).to.deep.equal(data);
    });
  });

  describe('sessions against a relay with SESSION_KEYS and AUTH_READS=required', () => {
    let api: TestApi;
    before(async () => {
      api = await startTestApi({
        SESSION_KEYS: `k1:${Buffer.alloc(32, 9).toString('base64')}`,
        AUTH_READS: 'required',
      });
    });
    after(() => api?.stop());

    const session = (key: Buffer, extra: string[]) =>
      run(['session', '--relay', api.url, '--key', key.toString('hex'), ...extra]).then(
        (out) => JSON.parse(out) as Record<string, unknown>,
      );

    it('the session command exchanges a pair’s challenge; its token reads the pair’s mailbox', async () => {
      const grant = await session(KEY_PRIVATE, ['--other-public-key', WALLET_PUBLIC, '--side', 'key']);
      expect(grant).to.deep.equal({
        token: grant.token,
        tokenType: 'Bearer',
        expiresAt: grant.expiresAt,
        expiresIn: 3600,
        wkIdentity: PAIR.wkIdentity,
        side: 'key',
      });
      const path = `/v1/action/${PAIR.wkIdentity}`;
      expect((await get(api.url, path)).body.error.code).to.equal('AUTH_REQUIRED');
      const read = await get(api.url, path, { authorization: `Bearer ${grant.token}` });
      expect([read.status, read.body.error.code]).to.deep.equal([404, 'NOT_FOUND']);
    });

    it('without the other key: a wallet session, whose token reads the pairing record', async () => {
      const record = {
        chain: 'btc',
        walletIdentity: PAIR.walletIdentity,
        keyXpub: `xpub${'K'.repeat(107)}`,
        wkIdentity: PAIR.wkIdentity,
      };
      await redis().set(keys.sync(PAIR.walletIdentity), JSON.stringify(record));
      const grant = await session(WALLET_PRIVATE, []);
      expect(grant).to.deep.include({
        walletIdentity: PAIR.walletIdentity,
        side: 'wallet',
        tokenType: 'Bearer',
      });
      const path = `/v1/sync/${PAIR.walletIdentity}`;
      expect((await get(api.url, path)).body.error.code).to.equal('AUTH_REQUIRED');
      const read = await get(api.url, path, { authorization: `Bearer ${grant.token as string}` });
      expect(read.body).to.deep.equal({ success: true, data: record });
    });
  });
});
