import type { ParameterizedContext } from 'koa';
import type { Logger } from '../log.js';

export interface RelayState {
  requestId: string;
  log: Logger;
}

export type RelayContext = ParameterizedContext<RelayState>;

/** Every success answer of the API: `{ success: true, data }`. */
export function ok(ctx: RelayContext, data: unknown): void {
  ctx.status = 200;
  ctx.body = { success: true, data };
}
