import type { ParameterizedContext } from 'koa';
import type { Logger } from '../log.js';
import type { RequestLimit } from './rate-limit.js';

export interface RelayState {
  requestId: string;
  log: Logger;
  /** Size of the decoded request body, once jsonBody has read it (what the write budget charges). */
  bodyBytes?: number;
  /** The global rate limit, when the route consumes it in its own Redis script (see http/rate-limit.ts). */
  limit?: RequestLimit;
}

export type RelayContext = ParameterizedContext<RelayState>;

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * A success answer whose `data` is already JSON text (a record as Redis holds it): spliced into the envelope
 * without a parse and a re-serialization, which matters for megabyte action payloads.
 */
export function okJson(ctx: RelayContext, dataJson: string): void {
  ctx.status = 200;
  // Setting the type first keeps Koa from guessing one for a string body.
  ctx.set('Content-Type', JSON_TYPE);
  ctx.body = `{"success":true,"data":${dataJson}}`;
}

/** Every success answer of the API: `{ success: true, data }`. */
export function ok(ctx: RelayContext, data: unknown): void {
  okJson(ctx, JSON.stringify(data));
}
