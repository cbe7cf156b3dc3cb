/** The chains the relay knows by name; any other identifier is still relayed with generic checks. */
export const UTXO_CHAINS = [
  'btc',
  'btcTestnet',
  'btcSignet',
  'ltc',
  'doge',
  'zec',
  'bch',
  'flux',
  'fluxTestnet',
  'rvn',
] as const;
export const EVM_CHAINS = ['eth', 'sepolia', 'polygon', 'amoy', 'base', 'bsc', 'avax'] as const;

/**
 * Solana chains: Ed25519 has no public derivation, so the key app sends 20 leaf keys where other chains send
 * an xpub (docs/api.md#post-v1sync).
 */
export const SOLANA_CHAINS = ['solMainnet', 'solDevnet'] as const;

/** UTXO chains whose fees come from a mempool-compatible API; the others use configured values. */
export const MEMPOOL_FEE_CHAINS: readonly string[] = ['btc', 'ltc'];

export type EvmChain = (typeof EVM_CHAINS)[number];

export function isEvmChain(chain: string): chain is EvmChain {
  return (EVM_CHAINS as readonly string[]).includes(chain);
}
