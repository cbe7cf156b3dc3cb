import type { Feature } from '../core/feature.js';
import { marketReads, type MarketDeps } from './routes.js';
import { services } from './services-route.js';
import { startRefresh } from './worker.js';

export { fetchEvmFees, fetchMempoolFees, type FeeLevels } from './providers/fees.js';
export { fetchCryptoPrices, fetchFiatRates } from './providers/prices.js';
export { tokenInfoParams } from './schema.js';
export { MarketStore, type FeeEntry, type MarketField, type RatesPart } from './store.js';
export { TokenInfoService } from './token-info.js';
export { REFRESH_QUEUE } from './worker.js';

/** Rates, fees and token metadata served from Redis, and the services the apps show. */
export const market: Feature<
  MarketDeps & Parameters<typeof services.handling>[0],
  Parameters<typeof startRefresh>[0]
> = {
  name: 'market',
  routes: [...marketReads, services],
  worker: startRefresh,
};
