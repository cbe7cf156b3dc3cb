/**
 * The one table of what varies by action type (docs/api.md#action-types): which app it is for, whether a key
 * app that joins late gets it replayed, and the generic push text. The socket emitter, the replay on join and
 * the push worker all read it; adding a type is one row, here or (without a release) in ACTION_TYPES_EXTRA,
 * merged in at start-up. Types not listed are stored and readable, never emitted or pushed.
 */
import type { Side } from '../core/sides.js';

/** The one side whose socket path replays: a request waits for the key app, a reply to the wallet is read once. */
export const REPLAY_SIDE: Side = 'key';

export interface ActionTypeRule {
  /** The socket path (`/v1/socket/<side>`) and push-token side the event goes to. */
  side: Side;
  /** Replayed to a REPLAY_SIDE socket that joins while the mailbox holds it (only requests to that side are). */
  replay: boolean;
  /**
   * Push notification text, or null for a type that is emitted but never pushed. Generic on purpose: push
   * services are third parties (no amounts, no identities).
   */
  push: { title: string; body: string } | null;
}

/** A row of ACTION_TYPES_EXTRA as the operator writes it. */
export interface ExtraActionType {
  type: string;
  to: Side;
  replay: boolean;
  push: { title: string; body: string } | null;
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

/** The built-in rows: the types the wallet and key apps send. */
export const BUILT_IN_ACTION_TYPES: Readonly<Record<string, ActionTypeRule>> = Object.freeze({
  tx: toKey('Transaction request'),
  publicnoncesrequest: toKey('Key synchronization request'),
  evmsigningrequest: toKey('Signing request'),
  wksigningrequest: toKey('Signing request'),
  recoveryrequest: toKey('Wallet recovery request'),
  chainsyncrequest: toKey('Chain synchronization request'),
  txid: toWallet('Transaction signed'),
  txrejected: toWallet('Transaction rejected'),
  publicnonces: toWallet('Key synchronization received'),
  publicnoncesrejected: toWallet('Key synchronization rejected'),
  evmsigned: toWallet('Request signed'),
  evmsigningrejected: toWallet('Request rejected'),
  wksigned: toWallet('Request signed'),
  wksigningrejected: toWallet('Request rejected'),
  recoveryresponse: toWallet('Wallet recovery approved'),
  recoverydenied: toWallet('Wallet recovery denied'),
  chainsyncrejected: toWallet('Chain synchronization rejected'),
});

const table: Record<string, ActionTypeRule> = { ...BUILT_IN_ACTION_TYPES };

/** The table in use: the built-in rows and the operator's (addActionTypes). */
export const ACTION_TYPES: Readonly<Record<string, ActionTypeRule>> = table;

/**
 * Merges the operator's rows into the table; called once at start-up with the validated ACTION_TYPES_EXTRA
 * (readActionTypesExtra refuses a row that names a built-in type). Repeating a row is harmless.
 */
export function addActionTypes(rows: readonly ExtraActionType[]): void {
  for (const row of rows) table[row.type] = { side: row.to, replay: row.replay, push: row.push };
}

/** The rule for a type, or undefined for types the relay only stores. */
export function actionTypeRule(action: string): ActionTypeRule | undefined {
  return Object.hasOwn(table, action) ? table[action] : undefined;
}

/** The side whose tokens a push of this action type goes to, or undefined for a type that is never pushed. */
export function pushSide(action: string): Side | undefined {
  const rule = actionTypeRule(action);
  return rule?.push ? rule.side : undefined;
}

/**
 * What guards an unsigned action of this type: nothing when `exempt` (AUTH_UNSIGNED_ACTIONS) lists it, the pin of
 * its sender's side when the table knows it, and when the table does not (`unknown`) no one side is its sender.
 */
export function unsignedGuard(action: unknown, exempt: readonly string[]): 'exempt' | 'sender' | 'unknown' {
  if (typeof action !== 'string') return 'unknown';
  if (exempt.includes(action)) return 'exempt';
  return actionTypeRule(action) ? 'sender' : 'unknown';
}
