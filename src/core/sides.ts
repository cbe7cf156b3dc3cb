/** The two apps of a pair: the key app and the wallet app (a socket path, a token's side, a pin's side). */
export type Side = 'key' | 'wallet';
export const SIDES: readonly Side[] = ['key', 'wallet'];
