export type TokenSide = 'key' | 'wallet';

/** The relay's key layout (SPEC §8), in one place so operators and code agree. */
export interface Keys {
  sync(walletIdentity: string): string;
  action(wkIdentity: string): string;
  tokens(wkIdentity: string, side: TokenSide): string;
  /** `tokens(id, side)` is `tokenSetPrefix + side + ':' + id` (the token script builds it for moves). */
  tokenSetPrefix: string;
  /** Token → owner index: `tokenOwnerPrefix + side + ':' + sha1(token)` (built inside the token script). */
  tokenOwnerPrefix: string;
  rates: string;
  fees: string;
  tokenInfo(network: string, address: string): string;
  /** Marks a support job id as counted against a submission budget (one day, the job's dedupe window). */
  supportCounted(jobId: string): string;
}

export function keysFor(prefix: string): Keys {
  return {
    sync: (id) => `${prefix}sync:${id}`,
    action: (id) => `${prefix}action:${id}`,
    tokens: (id, side) => `${prefix}tokens:${side}:${id}`,
    tokenSetPrefix: `${prefix}tokens:`,
    tokenOwnerPrefix: `${prefix}tokens:owner:`,
    rates: `${prefix}rates`,
    fees: `${prefix}fees`,
    tokenInfo: (network, address) => `${prefix}tokeninfo:${network}:${address}`,
    supportCounted: (jobId) => `${prefix}support:counted:${jobId}`,
  };
}
