/** The two apps of a pair: the key app and the wallet app (a socket path, a token's side, a pin's side). */
export type Side = 'key' | 'wallet';
export const SIDES: readonly Side[] = ['key', 'wallet'];
/** The other app of the pair: a record's sender side is its target side's other. */
export const OTHER_SIDE: Record<Side, Side> = { key: 'wallet', wallet: 'key' };
