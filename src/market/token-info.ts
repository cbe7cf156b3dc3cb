import type { EvmChain } from '../core/chains.js';
import { unavailable } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { UpstreamError, type Upstream } from '../core/outbound-http.js';
import { fetchTokenMetadata } from './providers/token-metadata.js';
import type { MarketStore, TokenInfo } from './store.js';

/**
 * Token metadata: Redis first, else one JSON-RPC round whose answer (token or not-a-token) is cached. Concurrent
 * misses for one token in this process share that one lookup; failures are never cached.
 */
export class TokenInfoService {
  private readonly inFlight = new Map<string, Promise<TokenInfo | null>>();

  constructor(
    private readonly store: MarketStore,
    private readonly upstream: Upstream,
    private readonly rpcUrls: Record<EvmChain, string>,
  ) {}

  /** Null when the address is not a token; a 503 AppError when the chain's node fails. */
  async get(network: EvmChain, address: string, log: Logger): Promise<TokenInfo | null> {
    const cached = await this.store.readToken(network, address);
    if (cached) return cached.found ? cached.token : null;
    const key = `${network}:${address}`;
    let pending = this.inFlight.get(key);
    if (!pending) {
      pending = this.lookUp(network, address, log).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    return pending;
  }

  private async lookUp(network: EvmChain, address: string, log: Logger): Promise<TokenInfo | null> {
    let metadata;
    try {
      metadata = await fetchTokenMetadata(this.upstream, this.rpcUrls[network], address);
    } catch (err) {
      if (!(err instanceof UpstreamError)) throw err;
      log.warn('token metadata lookup failed', { network, err: err.message });
      throw unavailable(`The ${network} node is not answering; retry shortly.`, 5, err);
    }
    const token = metadata && { network, address, ...metadata, logo: null };
    await this.store.saveToken(network, address, token);
    return token;
  }
}
