/**
 * The one table of what varies by action type (docs/api.md#action-types): which app it is for, whether a key app that
 * joins late gets it replayed, and the generic push text. The socket emitter, the replay on join and the push
 * worker all read it; adding a type is one row. Types not listed are stored and readable, never emitted or pushed.
 */
export type Side = 'key' | 'wallet';

export interface ActionTypeRule {
  /** The socket path (`/v1/socket/<side>`) and push-token side the event goes to. */
  side: Side;
  /** Replayed to a key socket that joins while the mailbox holds it (only requests to the key are). */
  replay: boolean;
  /** Push notification text: generic on purpose, push services are third parties (no amounts, no identities). */
  push: { title: string; body: string };
}

const toKey = (title: string): ActionTypeRule => ({
  side: 'key',
  replay: true,
  push: { title, body: 'Open your key app to review and sign' },
});

const toWallet = (title: string): ActionTypeRule => ({
  side: 'wallet',
  replay: false,
  push: { title, body: 'Open your wallet to continue' },
});

export const ACTION_TYPES: Readonly<Record<string, ActionTypeRule>> = Object.freeze({
  tx: toKey('Transaction request'),
  publicnoncesrequest: toKey('Key synchronization request'),
  evmsigningrequest: toKey('Signing request'),
  wksigningrequest: toKey('Signing request'),
  txid: toWallet('Transaction signed'),
  txrejected: toWallet('Transaction rejected'),
  publicnonces: toWallet('Key synchronization received'),
  publicnoncesrejected: toWallet('Key synchronization rejected'),
  evmsigned: toWallet('Request signed'),
  evmsigningrejected: toWallet('Request rejected'),
  wksigned: toWallet('Request signed'),
  wksigningrejected: toWallet('Request rejected'),
});

/** The rule for a type, or undefined for types the relay only stores. */
export function actionTypeRule(action: string): ActionTypeRule | undefined {
  return Object.hasOwn(ACTION_TYPES, action) ? ACTION_TYPES[action] : undefined;
}
