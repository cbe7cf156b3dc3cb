import type { Feature } from '../core/feature.js';
import { marketReads, type MarketDeps } from './routes.js';
import { services, type ServicesDeps } from './services.js';
import { startRefresh, type RefreshDeps } from './worker.js';

export { MarketStore } from './store.js';
export { REFRESH_QUEUE } from './worker.js';

/** Rates, fees and token metadata served from Redis, the services the apps show, and their refresh. */
export const market: Feature<MarketDeps & ServicesDeps, RefreshDeps> = {
  routes: [...marketReads, services],
  worker: startRefresh,
};
