import type { Feature } from '../core/feature.js';
import { MARKET_VARIABLES, marketSettings } from './variables.js';
import { marketReads, type MarketDeps } from './routes.js';
import { services, type ServicesDeps } from './services.js';
import { startRefresh, type RefreshDeps } from './worker.js';

export { MarketStore } from './store.js';
export { REFRESH_QUEUE } from './worker.js';

/** Rates, fees and token metadata served from Redis, the services the apps show, and their refresh. */
export const market = {
  config: { variables: MARKET_VARIABLES, settings: marketSettings },
  routes: [...marketReads, services],
  worker: startRefresh,
} satisfies Feature<MarketDeps & ServicesDeps, RefreshDeps>;
