import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Side } from '../../src/core/sides.js';
import { post } from './api.js';
import { dataOf, PAIR, publicKeyOf, signed, signMessage, type Pair } from './signing.js';

/** Two session keys of the tests: `SESSION_KEYS` lists `k1` (signing) then `k0`. */
export const KEY_1 = { kid: 'k1', secret: Buffer.alloc(32, 0x61) };
export const KEY_0 = { kid: 'k0', secret: Buffer.alloc(32, 0x62) };
export const keysVariable = (...keys: { kid: string; secret: Buffer }[]) =>
  keys.map((key) => `${key.kid}:${key.secret.toString('base64')}`).join(',');
export const SESSION_ENV = { SESSION_KEYS: keysVariable(KEY_1, KEY_0) };

/** A challenge for a pair side (or a wallet alone, with `walletIdentity`). */
export async function challengeFor(base: string, subject: Record<string, string>): Promise<string> {
  const res = await post(base, '/v1/session/challenge', subject);
  if (res.status !== 200) throw new Error(`challenge refused: ${res.text}`);
  return res.body.data.challenge as string;
}

/** An exchange body of a pair side, signed for `session` by one of the pair's keys. */
export function pairExchange(
  pair: Pair,
  side: Side,
  challenge: string,
  options: { by?: Side; nonce?: string; timestamp?: number; purpose?: 'session' | 'action' } = {},
) {
  return signed(
    { wkIdentity: pair.wkIdentity, side, challenge },
    {
      purpose: options.purpose ?? 'session',
      pair,
      by: options.by ?? side,
      nonce: options.nonce ?? challenge,
      ...(options.timestamp === undefined ? {} : { timestamp: options.timestamp }),
    },
  );
}

/** An exchange body of a wallet alone, signed for `session` by the key behind its walletIdentity. */
export function walletExchange(
  walletIdentity: string,
  privateKey: Uint8Array,
  challenge: string,
  options: { nonce?: string } = {},
) {
  const body = { walletIdentity, challenge };
  const message = JSON.stringify({
    timestamp: Date.now(),
    action: 'session',
    identity: walletIdentity,
    nonce: options.nonce ?? challenge,
    data: dataOf(body),
  });
  return {
    ...body,
    signature: signMessage(message, privateKey),
    message,
    publicKey: publicKeyOf(privateKey),
  };
}

/** A session token of a pair side, through the relay's own routes. */
export async function pairToken(
  base: string,
  side: Side,
  pair: Pair = PAIR,
  by: Side = side,
): Promise<string> {
  const challenge = await challengeFor(base, { wkIdentity: pair.wkIdentity, side });
  const res = await post(base, '/v1/session', pairExchange(pair, side, challenge, { by }));
  if (res.status !== 200) throw new Error(`exchange refused: ${res.text}`);
  return res.body.data.token as string;
}

/** A session token of a wallet alone. */
export async function walletToken(base: string, pair: Pair = PAIR): Promise<string> {
  const challenge = await challengeFor(base, { walletIdentity: pair.walletIdentity });
  const res = await post(
    base,
    '/v1/session',
    walletExchange(pair.walletIdentity, pair.walletPrivate, challenge),
  );
  if (res.status !== 200) throw new Error(`exchange refused: ${res.text}`);
  return res.body.data.token as string;
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Claims as the relay writes them, for a pair side of `pair`, valid now. */
export function claimsOf(pair: Pair, side: Side, overrides: Record<string, unknown> = {}) {
  const iat = Math.floor(Date.now() / 1000);
  return {
    sub: pair.wkIdentity,
    aud: 'multisig-relay',
    iat,
    exp: iat + 3600,
    jti: randomBytes(16).toString('base64url'),
    kind: 'pair',
    side,
    rev: 0,
    pin: 0,
    ...overrides,
  };
}

/** A token signed by a test key (as the relay would, or as a forger holding a key would). */
export async function tokenOf(
  claims: Record<string, unknown>,
  key: { kid: string; secret: Buffer } = KEY_1,
  header: Record<string, unknown> = {},
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: key.kid, ...header })
    .sign(new Uint8Array(key.secret));
}
