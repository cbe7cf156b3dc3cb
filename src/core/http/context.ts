import type { Middleware, ParameterizedContext } from 'koa';
import { matchedRoute } from '../library-patches.js';
import type { Logger } from '../log.js';
import type { RequestLimit } from '../limits/rate-limit.js';
import type { Admission } from './connection-guard.js';

export interface RelayState {
  requestId: string;
  log: Logger;
  /** Size of the decoded request body, once jsonBody has read it (what the write budget charges). */
  bodyBytes?: number;
  /** The global rate limit, when the route consumes it in its own Redis script (see core/limits/rate-limit.ts). */
  limit?: RequestLimit;
  /** The id a verified write's record goes by (see identity/route-guard.ts). */
  writeId?: string;
  /** The side a session token that passed names: an ack's record must be of that side's direction. */
  tokenSide?: 'key' | 'wallet';
  /** Set by a route as it starts writing: from then on a failure keeps the request's nonce spent. */
  writing?: boolean;
  /** A success answer's payload as JSON text, set by ok/okJson; successAnswers gives it its shape. */
  data?: string;
  /** The request's admission by the connection guard (see idle). */
  admission?: Admission;
  /** Milliseconds the request spent idle (see idle): left out of its duration metric. */
  idleMs?: number;
}

export type RelayContext = ParameterizedContext<RelayState>;

/**
 * Waits for `work` as an idle request: without its HTTP_ANSWERS_PER_IP slot, and with the time left out of the
 * request duration metric (what a long-poll waits is the client's choice, not the relay's latency).
 */
export async function idle<T>(ctx: RelayContext, work: Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await (ctx.state.admission ? ctx.state.admission.idle(work) : work);
  } finally {
    ctx.state.idleMs = (ctx.state.idleMs ?? 0) + performance.now() - started;
  }
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** A success answer whose payload is already JSON text (a record as Redis holds it): never parsed again. */
export function okJson(ctx: RelayContext, dataJson: string): void {
  ctx.status = 200;
  ctx.state.data = dataJson;
}

/** A success answer of the API. */
export function ok(ctx: RelayContext, data: unknown): void {
  okJson(ctx, JSON.stringify(data));
}

/**
 * The one place that shapes a success answer: `{ "success": true, "data": … }`, or the payload alone on the
 * routes `bare` names (`GET /v1/sync/:id`). The payload is spliced in as text, which matters for megabyte
 * action payloads.
 */
export function successAnswers(bare: ReadonlySet<string>): Middleware<RelayState> {
  return async (ctx, next) => {
    await next();
    const data = ctx.state.data;
    if (data === undefined) return;
    const route = `${ctx.method === 'HEAD' ? 'GET' : ctx.method} ${matchedRoute(ctx)}`;
    // Setting the type first keeps Koa from guessing one for a string body.
    ctx.set('Content-Type', JSON_TYPE);
    ctx.body = bare.has(route) ? data : `{"success":true,"data":${data}}`;
  };
}
