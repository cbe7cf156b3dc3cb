export { fetchEvmFees, fetchMempoolFees, type FeeLevels } from './providers/fees.js';
export { fetchCryptoPrices, fetchFiatRates } from './providers/prices.js';
export { refreshJobs, type RefreshName } from './refresh.js';
export { marketRoutes, networkFeesRead, ratesRead, tokenInfoRead } from './routes.js';
export { tokenInfoParams } from './schema.js';
export { servicesRead, servicesRoutes } from './services-route.js';
export { MarketStore, type FeeEntry, type MarketField, type RatesPart } from './store.js';
export { TokenInfoService } from './token-info.js';
export { MARKET_VARIABLES as variables, marketSettings as settings } from './variables.js';
