import { recordHttpRequest } from '../metrics.js';
import type { RelayContext } from './context.js';

interface RoutedContext {
  _matchedRoute?: unknown;
  /** @koa/router's layers whose path matched, whatever their methods: what a 405 has instead of a route. */
  matched?: { path: unknown; methods: string[] }[];
}

/**
 * The route template is the matched route with its parameters left out, so identities stay out of logs too.
 * A known path asked with the wrong method (405) counts under its route; only unknown paths are `unmatched`.
 */
function routeTemplate(ctx: object): string {
  const { _matchedRoute: route, matched } = ctx as RoutedContext;
  if (typeof route === 'string') return route;
  const layer = matched?.findLast((candidate) => candidate.methods.length > 0);
  return typeof layer?.path === 'string' ? layer.path : 'unmatched';
}

/** Probes ask every few seconds on every pod: their lines go to debug, so info shows the clients' traffic. */
const PROBES = new Set(['/healthz', '/readyz']);

/**
 * One line per request (method, route template, status, duration and the part of it spent idle; never bodies,
 * payloads or tokens) and the request metrics (the duration without the idle part), from one route lookup. Called by the outer middleware once the status is final.
 */
export function logRequest(ctx: RelayContext, ms: number): void {
  const route = routeTemplate(ctx);
  const { idleMs } = ctx.state;
  recordHttpRequest(ctx.method, route, ctx.status, (ms - (idleMs ?? 0)) / 1000);
  const fields = {
    method: ctx.method,
    route,
    status: ctx.status,
    ms: Math.round(ms * 10) / 10,
    ...(idleMs !== undefined ? { idleMs: Math.round(idleMs * 10) / 10 } : {}),
    ip: ctx.ip,
  };
  if (PROBES.has(route)) ctx.state.log.debug('request', fields);
  else ctx.state.log.info('request', fields);
}
