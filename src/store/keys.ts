/** The relay's key layout (SPEC §8), in one place so operators and code agree. */
export interface Keys {
  sync(walletIdentity: string): string;
  action(wkIdentity: string): string;
  tokens(wkIdentity: string, side: 'key' | 'wallet'): string;
  /** Prefix of the token → owner index; the script appends the token's SHA-1. */
  tokenOwnerPrefix: string;
  rates: string;
  fees: string;
  tokenInfo(network: string, address: string): string;
}

export function keysFor(prefix: string): Keys {
  return {
    sync: (id) => `${prefix}sync:${id}`,
    action: (id) => `${prefix}action:${id}`,
    tokens: (id, side) => `${prefix}tokens:${side}:${id}`,
    tokenOwnerPrefix: `${prefix}tokens:owner:`,
    rates: `${prefix}rates`,
    fees: `${prefix}fees`,
    tokenInfo: (network, address) => `${prefix}tokeninfo:${network}:${address}`,
  };
}
