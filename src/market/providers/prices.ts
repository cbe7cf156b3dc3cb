import ids from '../coingecko-ids.json' with { type: 'json' };
import { amount, isRecord, UpstreamError, type Upstream } from '../../core/outbound-http.js';

/**
 * Price keys by provider id: lowercase chain ids and token symbols, and the wallet app's own chain ids where
 * they differ from the symbol (`solMainnet`), as it spells them. Testnets have no provider id.
 */
const KEYS_BY_ID = new Map<string, string[]>();
const NO_MARKET_VALUE: string[] = [];
for (const [key, id] of [
  ...[...Object.entries(ids.tokens), ...Object.entries(ids.chains)].map(
    ([k, v]) => [k.toLowerCase(), v] as const,
  ),
  ...Object.entries(ids.appChainIds),
]) {
  if (id === null) NO_MARKET_VALUE.push(key);
  else KEYS_BY_ID.set(id, [...(KEYS_BY_ID.get(id) ?? []), key]);
}

/** USD prices keyed by lowercase chain id and token symbol; testnet coins are worth 0. */
export async function fetchCryptoPrices(
  upstream: Upstream,
  baseUrl: string,
): Promise<Record<string, number>> {
  const query = `ids=${[...KEYS_BY_ID.keys()].sort().join(',')}&vs_currencies=usd`;
  const answer = await upstream.getJson(`${baseUrl}/simple/price?${query}`);
  if (!isRecord(answer)) throw new UpstreamError('price answer is not an object');
  const prices: Record<string, number> = {};
  for (const [id, keys] of KEYS_BY_ID) {
    const entry = answer[id];
    if (!isRecord(entry) || entry.usd === undefined) continue;
    const usd = amount(entry.usd, `price of ${id}`);
    for (const key of keys) prices[key] = usd;
  }
  if (!prices.btc || !prices.eth) throw new UpstreamError('price answer lacks bitcoin or ethereum');
  for (const key of NO_MARKET_VALUE) prices[key] = 0;
  return prices;
}

/** Units of each currency per 1 USD, from a `{ rates: { EUR: 0.92, … } }` answer. */
export async function fetchFiatRates(upstream: Upstream, url: string): Promise<Record<string, number>> {
  const answer = await upstream.getJson(url);
  if (!isRecord(answer) || !isRecord(answer.rates))
    throw new UpstreamError('fiat answer has no rates object');
  const rates: Record<string, number> = {};
  for (const [currency, value] of Object.entries(answer.rates)) {
    if (!/^[A-Z]{3}$/.test(currency)) continue;
    const rate = amount(value, `rate of ${currency}`);
    if (rate > 0) rates[currency] = rate;
  }
  rates.USD = 1;
  if (Object.keys(rates).length < 2) throw new UpstreamError('fiat answer has no usable rate');
  return rates;
}
