/** The routes a signing app signs, by purpose word: the word a message is signed for, and what AUTH_MODE governs. */
export type AuthRoute = 'action' | 'token' | 'sync' | 'join' | 'ack';
export const AUTH_ROUTES: readonly AuthRoute[] = ['action', 'token', 'sync', 'join', 'ack'];

/** The signable routes: those AUTH_MODE governs, and the recovery xpub's, which is always signed. */
export type SignedRoute = AuthRoute | 'recoverypub';

/** The purpose word a route's messages are signed for; the recovery xpub is signed as part of the sync. */
export const PURPOSE: Record<SignedRoute, AuthRoute> = {
  action: 'action',
  token: 'token',
  sync: 'sync',
  join: 'join',
  ack: 'ack',
  recoverypub: 'sync',
};
