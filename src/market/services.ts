import { ok } from '../core/http/context.js';
import type { MarketConfig } from './variables.js';
import type { MountedRoute } from '../core/feature.js';
import type { RouteSpec } from '../core/http/route-spec.js';

export const servicesRead = {
  method: 'get',
  path: '/v1/services',
  summary: 'Which third-party features the apps should show',
  doc: 'get-v1services',
  data: 'Services',
  bareForApps: true,
  errors: [],
} satisfies RouteSpec;

/** Which third-party features the apps should show: straight from the SERVICES configuration. */
export interface ServicesDeps {
  config: { market: Pick<MarketConfig, 'services'> };
}

export const services: MountedRoute<ServicesDeps> = {
  spec: servicesRead,
  handling: ({ config }) => ({ handler: (ctx) => ok(ctx, config.market.services) }),
};
