import { EVM_CHAINS, MEMPOOL_FEE_CHAINS, UTXO_CHAINS, type EvmChain } from '../core/chains.js';
import { int, jsonObject, numberMap, oneOf, url } from '../core/config/parsers.js';
import { API, BOTH, WORKER, variable, type ValuesOf, type Variable } from '../core/config/variables.js';

const DEFAULT_PRIORITY_FEE_FLOOR_GWEI: Record<EvmChain, number> = {
  eth: 0.1,
  sepolia: 0.1,
  polygon: 30,
  amoy: 30,
  base: 0.001,
  bsc: 0.1,
  avax: 0.001,
};

/** The fixed rates the wallet app itself uses as its floor (Ravencoin's minimum relay fee is 1000 sat/B). */
const DEFAULT_FIXED_FEES: Record<string, number> = {
  btcTestnet: 5,
  btcSignet: 4,
  doge: 1100,
  zec: 30,
  bch: 4,
  flux: 1,
  fluxTestnet: 1,
  rvn: 1050,
};

const DEFAULT_EVM_RPC: Record<EvmChain, string> = {
  eth: 'https://ethereum-rpc.publicnode.com',
  sepolia: 'https://ethereum-sepolia-rpc.publicnode.com',
  polygon: 'https://polygon-bor-rpc.publicnode.com',
  amoy: 'https://polygon-amoy-bor-rpc.publicnode.com',
  base: 'https://base-rpc.publicnode.com',
  bsc: 'https://bsc-rpc.publicnode.com',
  avax: 'https://avalanche-c-chain-rpc.publicnode.com',
};

type EvmRpcVariable = `EVM_RPC_${Uppercase<EvmChain>}`;
const evmRpcVariable = (chain: EvmChain) => `EVM_RPC_${chain.toUpperCase()}` as EvmRpcVariable;

const EVM_RPC = Object.fromEntries(
  EVM_CHAINS.map((chain, index) => [
    evmRpcVariable(chain),
    variable(url(), DEFAULT_EVM_RPC[chain], {
      roles: BOTH,
      shown: 'public endpoints',
      ...(index === 0 ? { doc: 'JSON-RPC for EVM fees and token metadata' } : {}),
    }),
  ]),
) as Record<EvmRpcVariable, Variable<string>>;

/** The market's variables: the services answer, price and fee providers, and their refresh. */
export const MARKET_VARIABLES = {
  SERVICES: variable(
    jsonObject,
    { onramp: true, offramp: true, swap: true },
    {
      roles: API,
      doc: 'JSON object served by `/v1/services`',
    },
  ),
  RATES_CRYPTO_URL: variable(url(), 'https://api.coingecko.com/api/v3', {
    roles: WORKER,
    shown: 'CoinGecko',
    doc: 'price providers (CoinGecko-compatible; `{ rates }` per 1 USD)',
  }),
  RATES_FIAT_URL: variable(url(), 'https://open.er-api.com/v6/latest/USD', {
    roles: WORKER,
    shown: 'open.er-api.com',
  }),
  MARKET_REFRESH: variable(oneOf(['on', 'off']), 'on', {
    roles: WORKER,
    doc: '`off`: the worker fetches no rates or fees (a laptop without internet); `/v1/rates` and `/v1/networkfees` answer 503 saying so',
  }),
  RATES_REFRESH_SECONDS: variable(int(1, 86_400), 300, {
    roles: WORKER,
    doc: 'background refresh periods (worker)',
  }),
  FEES_REFRESH_SECONDS: variable(int(1, 86_400), 30, { roles: WORKER }),
  FEES_BTC_URL: variable(url(), 'https://mempool.space/api', {
    roles: WORKER,
    shown: 'mempool.space',
    doc: 'mempool-compatible fee APIs',
  }),
  FEES_LTC_URL: variable(url(), 'https://litecoinspace.org/api', {
    roles: WORKER,
    shown: 'litecoinspace.org',
  }),
  ...EVM_RPC,
  EVM_PRIORITY_FEE_FLOOR_GWEI: variable(
    numberMap(DEFAULT_PRIORITY_FEE_FLOOR_GWEI, EVM_CHAINS),
    DEFAULT_PRIORITY_FEE_FLOOR_GWEI,
    {
      roles: WORKER,
      shown: 'per-chain defaults',
      doc: 'JSON object `{ "eth": 0.05, … }` overriding the priority-fee floors',
    },
  ),
  FEES_FIXED_SAT_VB: variable(
    numberMap(
      DEFAULT_FIXED_FEES,
      UTXO_CHAINS.filter((chain) => !MEMPOOL_FEE_CHAINS.includes(chain)),
    ),
    DEFAULT_FIXED_FEES,
    {
      roles: WORKER,
      shown: 'per-chain defaults',
      doc: 'JSON object of fixed fees for chains without a fee API (doge, zec, bch, flux, rvn, …)',
    },
  ),
  UPSTREAM_TIMEOUT_MS: variable(int(50, 5000), 5000, {
    roles: BOTH,
    doc: 'one upstream call (at most 5000)',
  }),
};

export function marketSettings(v: ValuesOf<typeof MARKET_VARIABLES>) {
  return {
    market: {
      services: v.SERVICES,
      refresh: v.MARKET_REFRESH === 'on',
      ratesCryptoUrl: v.RATES_CRYPTO_URL,
      ratesFiatUrl: v.RATES_FIAT_URL,
      ratesRefreshSeconds: v.RATES_REFRESH_SECONDS,
      feesRefreshSeconds: v.FEES_REFRESH_SECONDS,
      feesBtcUrl: v.FEES_BTC_URL,
      feesLtcUrl: v.FEES_LTC_URL,
      evmRpc: Object.fromEntries(EVM_CHAINS.map((chain) => [chain, v[evmRpcVariable(chain)]])) as Record<
        EvmChain,
        string
      >,
      upstreamTimeoutMs: v.UPSTREAM_TIMEOUT_MS,
      priorityFeeFloorGwei: v.EVM_PRIORITY_FEE_FLOOR_GWEI,
      fixedFees: v.FEES_FIXED_SAT_VB,
    },
  };
}

export type MarketConfig = ReturnType<typeof marketSettings>['market'];
