import { isUtf8 } from 'node:buffer';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Middleware } from 'koa';
import type { RelayContext, RelayState } from './context.js';
import { AppError } from './errors.js';

declare module 'koa' {
  interface Request {
    /** The parsed JSON object, set by jsonBody. */
    body?: unknown;
  }
}

export const DEFAULT_BODY_LIMIT = 64 * 1024;
export const ACTION_BODY_LIMIT = 2 * 1024 * 1024;
/** SPEC §2: the largest valid record (1000 nonces of 500 characters) must fit. */
export const SYNC_BODY_LIMIT = 640 * 1024;
/** Partner parameters are at most 5000 characters once signed; 16 KiB leaves room for JSON escapes. */
export const SIGN_BODY_LIMIT = 16 * 1024;
/** Support forms allow 50,000 characters (SPEC §6); in UTF-8 that is up to 200 KB, so 64 KB would refuse them. */
export const SUPPORT_BODY_LIMIT = 256 * 1024;

type Decoder = () => Readable & NodeJS.WritableStream;

/** A Map, not an object literal: a coding named `constructor` or `toString` must not find a prototype's method. */
const DECODERS = new Map<string, Decoder | undefined>([
  ['identity', undefined],
  ['gzip', createGunzip],
  ['x-gzip', createGunzip],
  ['deflate', createInflate],
  ['br', createBrotliDecompress],
]);

const tooLarge = () =>
  new AppError('PAYLOAD_TOO_LARGE', 'The request body is larger than this endpoint accepts.');
const notJson = () => new AppError('INVALID_JSON', 'The request body is not valid JSON.');
const notObject = () => new AppError('INVALID_JSON', 'The request body must be a JSON object.');

/** 415 unless the body is `application/json` in UTF-8 (no charset parameter, or utf-8) with a known coding. */
function checkHeaders(ctx: RelayContext): Decoder | undefined {
  // The header itself, not ctx.is(): type-is answers null for a body-less request, which would make it a 415.
  if (ctx.request.type.trim().toLowerCase() !== 'application/json') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be application/json.');
  }
  const charset = ctx.request.charset.toLowerCase();
  if (charset !== '' && charset !== 'utf-8' && charset !== 'utf8') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be UTF-8 encoded JSON.');
  }
  const coding = (ctx.get('Content-Encoding') || 'identity').trim().toLowerCase();
  if (!DECODERS.has(coding)) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'The request body uses an unsupported Content-Encoding.', {
      headers: { 'Accept-Encoding': 'gzip, deflate, br' },
    });
  }
  return DECODERS.get(coding);
}

/**
 * The decoded body bytes, at most `limitBytes` of them (counted after decompression, so a small gzip bomb is a
 * 413 too). A client that goes away mid-body gets an INVALID_JSON nobody reads: no 500, no stack in the log.
 */
async function readBody(ctx: RelayContext, limitBytes: number): Promise<Buffer> {
  const decoder = checkHeaders(ctx);
  const { req } = ctx;
  if (!decoder && ctx.request.length > limitBytes) throw tooLarge();
  let source: Readable = req;
  if (decoder) {
    const decoding = decoder();
    req.pipe(decoding);
    // pipe() does not pass on an abort: without this the decoder would wait for more input forever.
    req.once('close', () => req.complete || decoding.destroy());
    source = decoding;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    // Leaving the loop early must not destroy the request: its socket still has to carry the answer.
    for await (const chunk of source.iterator({ destroyOnReturn: false })) {
      size += (chunk as Buffer).length;
      if (size > limitBytes) throw tooLarge();
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    // zlib's errors carry a numeric errno; anything else is the request stream dying under us.
    if (decoder && typeof (err as { errno?: unknown }).errno === 'number') {
      throw new AppError('INVALID_JSON', 'The request body could not be decompressed.');
    }
    throw new AppError('INVALID_JSON', 'The request body was incomplete.');
  } finally {
    if (decoder) {
      req.unpipe();
      source.destroy();
    }
    // Whatever is left unread is discarded, so the client can still read the answer on this connection.
    if (!req.complete) req.resume();
  }
  return Buffer.concat(chunks, size);
}

/** JSON.parse defines `__proto__` as an own key; refusing it keeps it from ever reaching an Object.assign. */
function refuseProto(key: string, value: unknown): unknown {
  if (key === '__proto__') throw notJson();
  return value;
}

/** Parses a body as one JSON object; the text is taken only from well-formed UTF-8, so nothing is altered. */
export function parseJsonObject(bytes: Buffer): Record<string, unknown> {
  if (!isUtf8(bytes)) throw new AppError('INVALID_JSON', 'The request body is not valid UTF-8.');
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'), refuseProto);
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw notJson();
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw notObject();
  return parsed as Record<string, unknown>;
}

/**
 * A route's JSON body: 415 unless UTF-8 `application/json` with a supported Content-Encoding, 413 over
 * `limitBytes` (against Content-Length before reading, and while reading), INVALID_JSON unless the body is one
 * JSON object in valid UTF-8 (an empty body included). The decoded size is kept in `ctx.state.bodyBytes`.
 */
export function jsonBody(limitBytes = DEFAULT_BODY_LIMIT): Middleware<RelayState> {
  return async (ctx, next) => {
    const bytes = await readBody(ctx, limitBytes);
    ctx.state.bodyBytes = bytes.length;
    ctx.request.body = parseJsonObject(bytes);
    await next();
  };
}
