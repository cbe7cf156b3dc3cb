import type { Feature } from '../core/feature.js';
import { marketReads, type MarketDeps } from './routes.js';
import { services } from './services-route.js';

export { fetchEvmFees, fetchMempoolFees, type FeeLevels } from './providers/fees.js';
export { fetchCryptoPrices, fetchFiatRates } from './providers/prices.js';
export { refreshJobs, type RefreshName } from './refresh.js';
export { tokenInfoParams } from './schema.js';
export { MarketStore, type FeeEntry, type MarketField, type RatesPart } from './store.js';
export { TokenInfoService } from './token-info.js';

/** Rates, fees and token metadata served from Redis, and the services the apps show. */
export const market: Feature<MarketDeps & Parameters<typeof services.handling>[0]> = {
  name: 'market',
  routes: [...marketReads, services],
};
