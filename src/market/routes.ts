import { isEvmChain } from '../core/chains.js';
import type { MarketConfig } from './variables.js';
import { ok } from '../core/http/context.js';
import type { MountedRoute } from '../core/feature.js';
import type { RouteSpec } from '../core/http/route-spec.js';
import { Upstream } from '../core/outbound-http.js';
import { AppError, unavailable } from '../core/errors.js';
import { validator } from '../core/validation/validate.js';
import { tokenInfoParams } from './schema.js';
import type { MarketStore } from './store.js';
import { TokenInfoService } from './token-info.js';

const parseTokenParams = validator<{ network: string; address: string }>('params', tokenInfoParams);

/**
 * With MARKET_REFRESH=off nothing will ever fetch them, so "retry shortly" would be a lie: the 503 says why and
 * has no Retry-After.
 */
function notFetched(what: string, refresh: boolean): AppError {
  if (refresh) return unavailable(`${what} have not been fetched yet; retry shortly.`, 10);
  return new AppError('UNAVAILABLE', `${what} are not fetched by this relay (MARKET_REFRESH=off).`);
}

export const ratesRead = {
  method: 'get',
  path: '/v1/rates',
  summary: 'Exchange rates, refreshed in the background',
  doc: 'get-v1rates',
  data: 'Rates',
  bareForApps: true,
  errors: ['UNAVAILABLE'],
} satisfies RouteSpec;

export const networkFeesRead = {
  method: 'get',
  path: '/v1/networkfees',
  summary: 'Network fee estimates per chain',
  doc: 'get-v1networkfees',
  data: 'NetworkFees',
  bareForApps: true,
  errors: ['UNAVAILABLE'],
} satisfies RouteSpec;

export const tokenInfoRead = {
  method: 'get',
  path: '/v1/tokeninfo/{network}/{address}',
  summary: 'ERC-20 token metadata',
  doc: 'get-v1tokeninfonetworkaddress',
  params: tokenInfoParams,
  data: 'TokenInfo',
  bareForApps: true,
  errors: ['INVALID_PARAMETER', 'NOT_FOUND', 'UNAVAILABLE'],
} satisfies RouteSpec;

/** What the market's routes use of the app. */
export interface MarketDeps {
  config: { market: MarketConfig };
  stores: { market: MarketStore };
}

/** Served from Redis only: the worker refreshes rates and fees; token metadata is fetched once, then cached. */
export const marketReads: MountedRoute<MarketDeps>[] = [
  {
    spec: ratesRead,
    handling: ({ config, stores }) => ({
      handler: async (ctx) => {
        const rates = await stores.market.readRates();
        if (!rates) throw notFetched('Exchange rates', config.market.refresh);
        ok(ctx, rates);
      },
    }),
  },
  {
    spec: networkFeesRead,
    handling: ({ config, stores }) => ({
      handler: async (ctx) => {
        const fees = await stores.market.readFees();
        if (fees.length === 0) throw notFetched('Network fees', config.market.refresh);
        ok(ctx, fees);
      },
    }),
  },
  {
    spec: tokenInfoRead,
    handling: ({ config, stores }) => {
      const upstream = new Upstream(config.market.upstreamTimeoutMs);
      const tokens = new TokenInfoService(stores.market, upstream, config.market.evmRpc);
      return {
        handler: async (ctx) => {
          const { network, address } = parseTokenParams({ ...ctx.params });
          if (!isEvmChain(network))
            throw new AppError('NOT_FOUND', 'Token metadata is not available on this network.');
          const token = await tokens.get(network, address.toLowerCase(), ctx.state.log);
          if (!token)
            throw new AppError('NOT_FOUND', 'This address is not a token contract on this network.');
          ok(ctx, token);
        },
      };
    },
  },
];
