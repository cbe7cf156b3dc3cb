import { isUtf8 } from 'node:buffer';
import inflate from 'inflation';
import type { Middleware } from 'koa';
import getRawBody from 'raw-body';
import type { RelayContext, RelayState } from './context.js';
import { AppError } from '../errors.js';

declare module 'koa' {
  interface Request {
    /** The parsed JSON object, set by jsonBody. */
    body?: unknown;
  }
}

export const DEFAULT_BODY_LIMIT = 64 * 1024;

/**
 * The codings inflation decodes, by the names a client may send (matched case-insensitively). A Map, not an
 * object literal: a coding named `constructor` or `toString` must not find a prototype's method.
 */
const CODINGS = new Map([
  ['identity', 'identity'],
  ['gzip', 'gzip'],
  ['x-gzip', 'gzip'],
  ['deflate', 'deflate'],
  ['br', 'br'],
]);

/** "2 MiB", "640 KiB": the limit as the 413 message says it. */
function size(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes / 1024} KiB`;
}

const tooLarge = (limitBytes: number) =>
  new AppError(
    'PAYLOAD_TOO_LARGE',
    `The request body is larger than this endpoint accepts (${size(limitBytes)} once decoded).`,
  );
const notJson = () => new AppError('INVALID_JSON', 'The request body is not valid JSON.');
const notUtf8 = () => new AppError('INVALID_JSON', 'The request body is not valid UTF-8.');
const notObject = () => new AppError('INVALID_JSON', 'The request body must be a JSON object.');

const JSON_ONLY = ['application/json'];
/** The types of a `key=value&key=value` body, as the wallet's HTTP client sends a string (API_PROFILE=ssp-apps). */
const QUERY_STRING_TYPES = ['application/json', 'application/x-www-form-urlencoded', 'text/plain'];

/** 415 unless the body is one of `types` in UTF-8 (no charset parameter, or utf-8) with a known coding. */
function checkHeaders(ctx: RelayContext, types: readonly string[]): string {
  // The header itself, not ctx.is(): type-is answers null for a body-less request, which would make it a 415.
  if (!types.includes(ctx.request.type.trim().toLowerCase())) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `The request body must be ${types.join(' or ')}.`);
  }
  const charset = ctx.request.charset.toLowerCase();
  if (charset !== '' && charset !== 'utf-8' && charset !== 'utf8') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be UTF-8 encoded JSON.');
  }
  const coding = CODINGS.get((ctx.get('Content-Encoding') || 'identity').trim().toLowerCase());
  if (coding === undefined) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'The request body uses an unsupported Content-Encoding.', {
      headers: { 'Accept-Encoding': 'gzip, deflate, br' },
    });
  }
  return coding;
}

/**
 * The decoded body bytes, at most `limitBytes` of them (counted after decompression, so a small gzip bomb is a
 * 413 too); how many were read, refused or not, is kept in `ctx.state.bodyBytes`. raw-body and inflation are
 * what koa-body reads with; they are used here without koa-body because koa-body decodes the text itself,
 * lossily (invalid UTF-8 becomes U+FFFD, so a payload would be stored altered) and answered bad encodings with
 * 500s. Here raw-body returns bytes only, and parseJsonObject refuses what is not well-formed UTF-8. A client
 * that goes away mid-body gets an INVALID_JSON nobody reads: no 500, no stack in the log.
 */
async function readBody(ctx: RelayContext, limitBytes: number, types = JSON_ONLY): Promise<Buffer> {
  const coding = checkHeaders(ctx, types);
  const { req } = ctx;
  const decoded = coding !== 'identity';
  const source = inflate(req, { encoding: coding });
  // pipe() does not pass on an abort: without this the decoder would wait for more input forever.
  if (decoded) req.once('close', () => req.complete || source.destroy());
  try {
    const bytes = await getRawBody(source, {
      limit: limitBytes,
      // Content-Length counts the encoded bytes; only an identity body can be refused before it is read.
      ...(decoded || ctx.request.length === undefined ? {} : { length: ctx.request.length }),
    });
    ctx.state.bodyBytes = bytes.length;
    return bytes;
  } catch (err) {
    const { type, errno, received } = err as { type?: string; errno?: unknown; received?: unknown };
    // raw-body's own errors say how much it had read; a decoder's error ends what it could decode.
    ctx.state.bodyBytes = typeof received === 'number' ? received : 0;
    if (type === 'entity.too.large') throw tooLarge(limitBytes);
    // zlib's errors carry a numeric errno; anything else is the request stream dying under us.
    if (decoded && typeof errno === 'number') {
      throw new AppError('INVALID_JSON', 'The request body could not be decompressed.');
    }
    throw new AppError('INVALID_JSON', 'The request body was incomplete.');
  } finally {
    if (decoded) {
      req.unpipe();
      source.destroy();
    }
    // Whatever is left unread is discarded, so the client can still read the answer on this connection.
    if (!req.complete) req.resume();
  }
}

/**
 * The shape of a body, bounded far above what any request's schema allows (the deepest nests an object in an
 * array in an object; the widest object has a few dozen fields; the longest array, an action's 10,000 utxos of
 * 6 fields, makes about 70,000 values), so that a body no request needs is refused before JSON.parse builds it.
 */
export const JSON_LIMITS = { depth: 8, fields: 1000, values: 100_000 } as const;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSERS = new Set([0x5d, 0x7d]);

/**
 * Where the string opened at `start` ends: the next quote not escaped by an odd run of backslashes, found with
 * the native byte search (payloads are megabyte strings), or -1.
 */
function stringEnd(bytes: Buffer, start: number): number {
  for (let end = start; ;) {
    end = bytes.indexOf(QUOTE, end + 1);
    if (end === -1) return -1;
    let backslashes = 0;
    while (bytes[end - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return end;
  }
}

/**
 * What makes JSON text exceed JSON_LIMITS, if anything: one pass counting brackets and commas outside strings.
 * No byte of a multi-byte UTF-8 character is ASCII, so none is taken for a quote, a bracket or a comma;
 * malformed text is left for JSON.parse to refuse.
 */
function overLimits(bytes: Buffer): string | undefined {
  // Per open array or object: its fields so far (objects), or -1 (arrays, whose length only `values` bounds).
  const open: number[] = [];
  // Commas separate values: as many as the body's values, less one per array and object.
  let commas = 0;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (byte === QUOTE) {
      i = stringEnd(bytes, i);
      if (i === -1) return undefined; // unterminated: JSON.parse refuses it
    } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      if (open.length === JSON_LIMITS.depth) return 'is nested deeper than any request needs';
      open.push(byte === OPEN_OBJECT ? 1 : -1);
    } else if (CLOSERS.has(byte)) open.pop();
    else if (byte === COMMA) {
      if (++commas >= JSON_LIMITS.values) return 'has more values than any request needs';
      const fields = open[open.length - 1];
      if (fields !== undefined && fields >= 0) {
        if (fields === JSON_LIMITS.fields) return 'has an object with more fields than any request needs';
        open[open.length - 1] = fields + 1;
      }
    }
  }
  return undefined;
}

/** Whether a parsed value holds an object with an own `__proto__` key (JSON.parse defines it as one). */
function hasProtoKey(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) return value.some(hasProtoKey);
  return Object.hasOwn(value, '__proto__') || Object.values(value).some(hasProtoKey);
}

/** Parses a body as one JSON object; the text is taken only from well-formed UTF-8, so nothing is altered. */
export function parseJsonObject(bytes: Buffer): Record<string, unknown> {
  if (!isUtf8(bytes)) throw notUtf8();
  const over = overLimits(bytes);
  if (over) throw new AppError('INVALID_JSON', `The request body ${over}.`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw notJson();
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw notObject();
  // Refused, so that `__proto__` never reaches an Object.assign.
  if (hasProtoKey(parsed)) throw notJson();
  return parsed as Record<string, unknown>;
}

/** Charges the bytes of a body read to the client (the write budget); throws to refuse the request. */
export type BodyCharge = (ctx: RelayContext, bytes: number) => Promise<void>;

/**
 * A route's JSON body: 415 unless UTF-8 `application/json` with a supported Content-Encoding, 413 over
 * `limitBytes` (against Content-Length before reading, and while reading), INVALID_JSON unless the body is one
 * JSON object in valid UTF-8 (an empty body included) within JSON_LIMITS. The decoded size is
 * kept in `ctx.state.bodyBytes`. `charge`, when given, is charged what was read before the body is parsed,
 * whether it is then refused or not: its refusal (a 429) is the answer.
 */
export function jsonBody(limitBytes = DEFAULT_BODY_LIMIT, charge?: BodyCharge): Middleware<RelayState> {
  return async (ctx, next) => {
    let bytes: Buffer;
    try {
      bytes = await readBody(ctx, limitBytes);
    } finally {
      await charge?.(ctx, ctx.state.bodyBytes ?? 0);
    }
    ctx.request.body = parseJsonObject(bytes);
    await next();
  };
}

/**
 * `key=value&key=value` as an object, keys in the order given: form values are URL-decoded, text is taken as it
 * is. A key given twice, or a pair without `=`, is INVALID_PARAMETER.
 */
function parseQueryString(text: string, form: boolean): Record<string, string> {
  const parameters: Record<string, string> = {};
  for (const pair of text.split('&')) {
    const at = pair.indexOf('=');
    let [key, value] = [pair.slice(0, at), pair.slice(at + 1)];
    if (form) {
      try {
        [key, value] = [key, value].map((part) => decodeURIComponent(part.replaceAll('+', ' '))) as [
          string,
          string,
        ];
      } catch {
        throw new AppError('INVALID_PARAMETER', 'The form body is not URL-encoded.');
      }
    }
    if (at <= 0 || Object.hasOwn(parameters, key)) {
      throw new AppError(
        'INVALID_PARAMETER',
        'The body must be key=value pairs separated by &, each key once.',
      );
    }
    // Defined, not assigned: `__proto__` stays an own key, so the route refuses it like any unknown name.
    Object.defineProperty(parameters, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return parameters;
}

/**
 * A partner's parameters: a JSON object, or with `queryString` also a form or text body holding
 * `key=value&key=value`; the same limits and errors as jsonBody otherwise.
 */
export function parametersBody(limitBytes: number, queryString: boolean): Middleware<RelayState> {
  if (!queryString) return jsonBody(limitBytes);
  return async (ctx, next) => {
    const bytes = await readBody(ctx, limitBytes, QUERY_STRING_TYPES);
    const type = ctx.request.type.trim().toLowerCase();
    if (type === 'application/json') ctx.request.body = parseJsonObject(bytes);
    else if (!isUtf8(bytes)) throw notUtf8();
    else ctx.request.body = parseQueryString(bytes.toString('utf8'), type !== 'text/plain');
    await next();
  };
}
