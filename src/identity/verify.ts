import { createHash } from 'node:crypto';
import type { AuthRoute } from '../core/signed-routes.js';
import type { Location } from '../core/validation/validate.js';
import { credentialProperties } from './credential-schema.js';
import { p2pkhAddress, p2wshProgram, type Network } from './bitcoin.js';
import type { SignatureVerifier } from './signature.js';

/**
 * The identity checks of a signed request (docs/api.md, "Identity-signed requests"), in their fixed order,
 * cheapest first: everything up to the script's match against the identity (an address, which shows only the
 * script's hash) is string work, so a junk signature from someone holding only the address is refused before any
 * curve arithmetic.
 * Pure: no clock (the caller passes `nowMs`), no Redis, no HTTP.
 */

/** The four fields a signing app adds to a body or a join; never stored, echoed or logged. */
const CREDENTIAL_FIELDS = ['signature', 'message', 'publicKey', 'witnessScript'] as const;
/** A request carries a credential when all of these are present; some of them is a partial credential. */
export const SIGNING_FIELDS = ['signature', 'message', 'publicKey'] as const;

/** Where the fields came from, for the `field` of a refusal: `/body/…` or `/event/…` (a socket join). */
export type CredentialLocation = Extract<Location, 'body' | 'event'>;

/** What a message may be signed for: a route's purpose word, or a session's. */
export type Purpose = AuthRoute | 'session';

export interface SignedRequest {
  /** What the message is signed for; a message for one purpose is refused on every other. */
  purpose: Purpose;
  /**
   * `wallet`: signed by the key behind the body's `walletIdentity` (a P2PKH address), without a script; else by a
   * key of the script of the body's `wkIdentity`.
   */
  subject?: 'pair' | 'wallet';
  location: CredentialLocation;
  /** The request as parsed, credential fields included. */
  body: Readonly<Record<string, unknown>>;
  /** The wkIdentity the path names (an ack), where the body has none. */
  identity?: string;
}

export interface Verified {
  ok: true;
  /** The identity signed for: the wkIdentity, or a wallet subject's walletIdentity. */
  wkIdentity: string;
  nonce: string;
  timestamp: number;
}

/** A failed check: `reason` is the word metrics and logs carry, `field` names what failed. */
export interface CredentialRefusal {
  ok: false;
  code: 'AUTH_INVALID' | 'AUTH_EXPIRED';
  reason: string;
  field: string;
  message: string;
}

const MAX_MESSAGE_BYTES = credentialProperties.message.maxLength;
const HEX64 = /^[0-9a-f]{64}$/;
/** 65 bytes of base64 (88 characters, one `=` of padding). */
const SIGNATURE = new RegExp(credentialProperties.signature.pattern);
const PUBLIC_KEY = new RegExp(credentialProperties.publicKey.pattern);
const HEX = new RegExp(credentialProperties.witnessScript.pattern);
/** OP_2 <33-byte key A> <33-byte key B> OP_2 OP_CHECKMULTISIG */
const MULTISIG_2_OF_2 = /^5221(0[23][0-9a-f]{64})21(0[23][0-9a-f]{64})52ae$/;
const MESSAGE_FIELDS = ['timestamp', 'action', 'identity', 'nonce', 'data'] as const;

interface Message {
  timestamp: number;
  action: string;
  identity: string;
  nonce: string;
  data: string;
}

class Refused extends Error {
  constructor(readonly refusal: CredentialRefusal) {
    super(refusal.message);
  }
}

function refuse(
  location: CredentialLocation,
  field: string,
  reason: string,
  message: string,
  code: CredentialRefusal['code'] = 'AUTH_INVALID',
): never {
  throw new Refused({ ok: false, code, reason, field: `/${location}/${field}`, message });
}

/** The request without the credential fields, keys in the order received: what `message.data` is the hash of. */
export function withoutCredential(body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    if (!(CREDENTIAL_FIELDS as readonly string[]).includes(key)) rest[key] = value;
  }
  return rest;
}

/** Hex SHA-256 of `JSON.stringify` of the request without its credential fields. */
export function bodyDigest(body: Readonly<Record<string, unknown>>): string {
  return createHash('sha256')
    .update(JSON.stringify(withoutCredential(body)))
    .digest('hex');
}

// 1: field shapes.
function checkShapes(
  location: CredentialLocation,
  body: Readonly<Record<string, unknown>>,
  withScript: boolean,
): void {
  const { signature, message, publicKey, witnessScript } = body;
  if (typeof signature !== 'string' || !SIGNATURE.test(signature)) {
    refuse(location, 'signature', 'shape', 'signature must be base64 of 65 bytes');
  }
  const header = Buffer.from(signature, 'base64')[0]!;
  if (header < 31 || header > 34) {
    refuse(location, 'signature', 'shape', 'signature must be for a compressed key (header 31 to 34)');
  }
  if (typeof message !== 'string' || Buffer.byteLength(message) > MAX_MESSAGE_BYTES) {
    refuse(location, 'message', 'shape', `message must be a string of at most ${MAX_MESSAGE_BYTES} bytes`);
  }
  if (typeof publicKey !== 'string' || !PUBLIC_KEY.test(publicKey)) {
    refuse(
      location,
      'publicKey',
      'shape',
      'publicKey must be a compressed public key in hex (66 characters)',
    );
  }
  if (withScript && (typeof witnessScript !== 'string' || !HEX.test(witnessScript))) {
    refuse(location, 'witnessScript', 'shape', 'witnessScript must be the hex of the pair’s script');
  }
}

// 2: the message parses as exactly these fields with these types.
function parseMessage(location: CredentialLocation, text: string): Message {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    refuse(location, 'message', 'message', 'message must be a JSON object');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    refuse(location, 'message', 'message', 'message must be a JSON object');
  }
  const fields = parsed as Record<string, unknown>;
  const keys = Object.keys(fields);
  if (keys.length !== MESSAGE_FIELDS.length || !MESSAGE_FIELDS.every((key) => Object.hasOwn(fields, key))) {
    refuse(
      location,
      'message',
      'message',
      `message must have exactly the fields ${MESSAGE_FIELDS.join(', ')}`,
    );
  }
  const at = (key: string) => `message/${key}`;
  if (
    typeof fields.timestamp !== 'number' ||
    !Number.isSafeInteger(fields.timestamp) ||
    fields.timestamp < 0
  ) {
    refuse(location, at('timestamp'), 'message', 'timestamp must be an integer of epoch milliseconds');
  }
  for (const key of ['action', 'identity'] as const) {
    if (typeof fields[key] !== 'string') refuse(location, at(key), 'message', `${key} must be a string`);
  }
  for (const key of ['nonce', 'data'] as const) {
    const value = fields[key];
    if (typeof value !== 'string' || !HEX64.test(value)) {
      refuse(location, at(key), 'message', `${key} must be 64 lowercase hex characters`);
    }
  }
  return fields as unknown as Message;
}

/** The keys that may sign for an identity, and its network. */
interface Signers {
  owners: string[];
  network: Network;
}

// 6 to 8: the script has the 2-of-2 shape, is the identity's, and holds the public key.
function scriptKeys(
  location: CredentialLocation,
  wkIdentity: string,
  body: Readonly<Record<string, unknown>>,
  publicKey: string,
): Signers {
  const script = (body.witnessScript as string).toLowerCase();
  // 6
  const keys = MULTISIG_2_OF_2.exec(script);
  if (!keys) refuse(location, 'witnessScript', 'script', 'witnessScript must be a 2-of-2 multisig script');
  // 7: the script is the pair's (its hash is the address's witness program). The address does not reveal it (only
  // a spend from the address puts it on chain), so a stranger holding only the address stops here.
  const address = p2wshProgram(wkIdentity);
  const scriptBytes = Buffer.from(script, 'hex');
  if (!address || !createHash('sha256').update(scriptBytes).digest().equals(address.program)) {
    refuse(location, 'witnessScript', 'script', 'witnessScript is not the script of wkIdentity');
  }
  // 8
  const owners = [keys[1]!, keys[2]!];
  if (!owners.includes(publicKey)) {
    refuse(location, 'publicKey', 'public_key', 'publicKey is not one of the script’s keys');
  }
  return { owners, network: address.network };
}

/** A wallet subject: the public key's compressed P2PKH address, on either network, is the walletIdentity. */
function walletKey(location: CredentialLocation, walletIdentity: string, publicKey: string): Signers {
  const key = Buffer.from(publicKey, 'hex');
  const network = NETWORKS.find((candidate) => p2pkhAddress(key, candidate) === walletIdentity);
  if (network === undefined) {
    refuse(location, 'publicKey', 'wallet_identity', 'publicKey is not the key of walletIdentity');
  }
  return { owners: [publicKey], network };
}

const NETWORKS: readonly Network[] = ['mainnet', 'testnet'];

function check(
  request: SignedRequest,
  verifier: SignatureVerifier,
  nowMs: number,
  windowMs: number,
): Verified {
  const { location, body, purpose } = request;
  const wallet = request.subject === 'wallet';
  checkShapes(location, body, !wallet);
  const signature = Buffer.from(body.signature as string, 'base64');
  const publicKey = (body.publicKey as string).toLowerCase();
  const message = parseMessage(location, body.message as string);

  // 3
  if (Math.abs(nowMs - message.timestamp) > windowMs) {
    refuse(
      location,
      'message/timestamp',
      'expired',
      'the message is outside the time window',
      'AUTH_EXPIRED',
    );
  }
  // 4
  const identityField = wallet ? 'walletIdentity' : 'wkIdentity';
  const identity = request.identity ?? body[identityField];
  if (typeof identity !== 'string' || message.identity !== identity) {
    refuse(location, 'message/identity', 'identity', `identity must equal ${identityField}`);
  }
  // 5
  if (message.action !== purpose) {
    refuse(location, 'message/action', 'purpose', `the message is not signed for ${purpose}`);
  }
  // 6 to 8, for a wallet subject: the key is the one behind the address.
  const keys = wallet
    ? walletKey(location, identity, publicKey)
    : scriptKeys(location, identity, body, publicKey);
  // 9
  if (bodyDigest(body) !== message.data) {
    refuse(location, 'message/data', 'data', 'data is not the hash of this request');
  }
  // 10
  if (
    !verifier.verifyMessage(
      Buffer.from(body.message as string, 'utf8'),
      signature.subarray(1),
      Buffer.from(publicKey, 'hex'),
    )
  ) {
    refuse(location, 'signature', 'signature', 'the signature does not verify for publicKey');
  }
  // 11: a record a signed sync writes under the wallet's identity: that identity must be the pair's too.
  if (purpose === 'sync' && body.walletIdentity !== undefined) {
    const owners = keys.owners.map((key) => p2pkhAddress(Buffer.from(key, 'hex'), keys.network));
    if (!owners.includes(body.walletIdentity as string)) {
      refuse(
        location,
        'walletIdentity',
        'wallet_identity',
        'walletIdentity is not the address of a key of the pair',
      );
    }
  }
  return { ok: true, wkIdentity: identity, nonce: message.nonce, timestamp: message.timestamp };
}

/** Runs checks 1 to 11 on a request that carries a credential (all of SIGNING_FIELDS), the curve step with `verifier`. */
export function verifyCredential(
  request: SignedRequest,
  verifier: SignatureVerifier,
  nowMs: number,
  windowMs: number,
): Verified | CredentialRefusal {
  try {
    return check(request, verifier, nowMs, windowMs);
  } catch (err) {
    if (err instanceof Refused) return err.refusal;
    throw err;
  }
}
