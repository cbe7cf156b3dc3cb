import { EVM_CHAINS } from '../core/chains.js';
import { ConditionLog } from '../core/condition-log.js';
import type { CoreConfig } from '../core/config/config.js';
import { errorFields, type Logger } from '../core/log.js';
import { Upstream } from '../core/outbound-http.js';
import { fetchEvmFees, fetchMempoolFees, type FeeLevels } from './providers/fees.js';
import { fetchCryptoPrices, fetchFiatRates } from './providers/prices.js';
import type { FeeEntry, MarketField, MarketStore, RatesPart } from './store.js';
import type { MarketConfig } from './variables.js';

export type RefreshName = 'rates' | 'fees';

/**
 * One refresh of each kind. Every provider is fetched on its own; what succeeds is written, what fails keeps its
 * last good value in Redis (and is logged), so one bad provider never blanks the others. A provider failing at
 * every refresh is logged when it starts failing and when it recovers, with summaries in between.
 */
export function refreshJobs(
  config: Pick<CoreConfig, 'logSummarySeconds'> & { market: MarketConfig },
  log: Logger,
  store: MarketStore,
): Record<RefreshName, () => Promise<void>> {
  const { market } = config;
  const upstream = new Upstream(market.upstreamTimeoutMs);
  const failures = new ConditionLog(log, config.logSummarySeconds * 1000);

  /** The fetched value, or undefined when the provider failed. */
  async function fetched<T>(
    provider: string,
    stored: MarketField,
    fetch: () => Promise<T>,
  ): Promise<T | undefined> {
    try {
      const value = await fetch();
      failures.ended(provider, 'market provider recovered', { provider });
      return value;
    } catch (err) {
      const fields = { provider, ...errorFields(err) };
      if (failures.occurred(provider, 'market provider still failing', fields)) {
        const kept = await store.has(stored).catch(() => false);
        log.warn(`market provider failed; ${kept ? 'keeping the last good value' : 'no value yet'}`, fields);
      }
      return undefined;
    }
  }

  async function rates(): Promise<void> {
    const parts: [RatesPart, () => Promise<Record<string, number>>][] = [
      ['crypto', () => fetchCryptoPrices(upstream, market.ratesCryptoUrl)],
      ['fiat', () => fetchFiatRates(upstream, market.ratesFiatUrl)],
    ];
    await Promise.all(
      parts.map(async ([part, fetch]) => {
        const values = await fetched(part, { rates: part }, fetch);
        if (values) await store.saveRatesPart(part, values);
      }),
    );
  }

  async function fees(): Promise<void> {
    const sources: [string, () => Promise<FeeLevels>][] = [
      ['btc', () => fetchMempoolFees(upstream, market.feesBtcUrl)],
      ['ltc', () => fetchMempoolFees(upstream, market.feesLtcUrl)],
      ...EVM_CHAINS.map((chain): [string, () => Promise<FeeLevels>] => [
        chain,
        () => fetchEvmFees(upstream, market.evmRpc[chain], market.priorityFeeFloorGwei[chain], chain),
      ]),
    ];
    const updatedAt = new Date().toISOString();
    const fixed: FeeEntry[] = Object.entries(market.fixedFees).map(([coin, fee]) => ({
      coin,
      economy: fee,
      normal: fee,
      fast: fee,
      recommended: fee,
      updatedAt,
    }));
    const levels = await Promise.all(
      sources.map(async ([coin, fetch]) => {
        const value = await fetched(coin, { fees: coin }, fetch);
        return value && { coin, ...value, updatedAt };
      }),
    );
    await store.saveFees([...levels.filter((entry) => entry !== undefined), ...fixed]);
  }

  return { rates, fees };
}
