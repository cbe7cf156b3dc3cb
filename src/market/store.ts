import { EVM_CHAINS, UTXO_CHAINS } from '../core/chains.js';
import type { FeeLevels } from './providers/fees.js';
import type { TokenMetadata } from './providers/token-metadata.js';
import type { RedisClient } from '../core/redis/clients.js';
import type { Keys } from '../core/redis/keys.js';

export interface Rates {
  /** Units of each currency per 1 USD (plus BTC and ETH). */
  fiat: Record<string, number>;
  /** USD price by lowercase chain id and token symbol. */
  crypto: Record<string, number>;
  /** When the older of the two parts was fetched. */
  updatedAt: string;
}

export type RatesPart = 'crypto' | 'fiat';

/** One stored market value: a part of the rates, or one coin's fees. */
export type MarketField = { rates: RatesPart } | { fees: string };

export interface FeeEntry extends FeeLevels {
  coin: string;
  updatedAt: string;
}

export interface TokenInfo extends TokenMetadata {
  network: string;
  address: string;
  logo: string | null;
}

/** A cache hit: the token, or the remembered answer that the address is not a token. */
export type CachedToken = { found: true; token: TokenInfo } | { found: false };

const TOKEN_FOUND_TTL_SECONDS = 24 * 3600;
const TOKEN_NOT_FOUND_TTL_SECONDS = 10 * 60;

interface Stamped<T> {
  values: T;
  updatedAt: string;
}

const CHAIN_ORDER: readonly string[] = [...UTXO_CHAINS, ...EVM_CHAINS];
function chainRank(coin: string): number {
  const rank = CHAIN_ORDER.indexOf(coin);
  return rank === -1 ? CHAIN_ORDER.length : rank;
}

/**
 * Market data in Redis: hashes `rates` (one field per part) and `fees` (one field per coin), so each part or
 * chain is overwritten only by its own successful fetch and keeps its last good value otherwise.
 */
export class MarketStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {}

  async saveRatesPart(part: RatesPart, values: Record<string, number>, at = new Date()): Promise<void> {
    const stamped: Stamped<Record<string, number>> = { values, updatedAt: at.toISOString() };
    await this.redis.hset(this.keys.rates, part, JSON.stringify(stamped));
  }

  /** Null until both prices and fiat rates were fetched once. */
  async readRates(): Promise<Rates | null> {
    const [cryptoJson, fiatJson] = await this.redis.hmget(this.keys.rates, 'crypto', 'fiat');
    if (!cryptoJson || !fiatJson) return null;
    const crypto = JSON.parse(cryptoJson) as Stamped<Record<string, number>>;
    const fiat = JSON.parse(fiatJson) as Stamped<Record<string, number>>;
    const btc = crypto.values.btc!;
    const eth = crypto.values.eth!;
    return {
      fiat: { ...fiat.values, BTC: 1 / btc, ETH: 1 / eth },
      crypto: crypto.values,
      updatedAt: crypto.updatedAt < fiat.updatedAt ? crypto.updatedAt : fiat.updatedAt,
    };
  }

  async saveFees(entries: FeeEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.redis.hset(
      this.keys.fees,
      Object.fromEntries(entries.map((e) => [e.coin, JSON.stringify(e)])),
    );
  }

  /** Every chain that ever had a value, in the chain list's order. */
  async readFees(): Promise<FeeEntry[]> {
    const all = await this.redis.hgetall(this.keys.fees);
    return Object.values(all)
      .map((json) => JSON.parse(json) as FeeEntry)
      .sort((a, b) => chainRank(a.coin) - chainRank(b.coin) || a.coin.localeCompare(b.coin));
  }

  /** Whether Redis holds a value for `field` (a last good value to keep when its provider fails). */
  async has(field: MarketField): Promise<boolean> {
    const [key, name] = 'rates' in field ? [this.keys.rates, field.rates] : [this.keys.fees, field.fees];
    return (await this.redis.hexists(key, name)) === 1;
  }

  /** Undefined on a miss. */
  async readToken(network: string, address: string): Promise<CachedToken | undefined> {
    const json = await this.redis.get(this.keys.tokenInfo(network, address));
    return json === null ? undefined : (JSON.parse(json) as CachedToken);
  }

  async saveToken(network: string, address: string, token: TokenInfo | null): Promise<void> {
    const [entry, ttl]: [CachedToken, number] = token
      ? [{ found: true, token }, TOKEN_FOUND_TTL_SECONDS]
      : [{ found: false }, TOKEN_NOT_FOUND_TTL_SECONDS];
    await this.redis.set(this.keys.tokenInfo(network, address), JSON.stringify(entry), 'EX', ttl);
  }
}
