/** The requests the HTTP phases of `npm run bench` send: the records, the bodies, and the load that drives them. */
import type { Child } from './children.js';
import { drive } from './load.js';

// A realistic pairing record (docs/api.md#post-v1sync): a 111-char xpub and a 62-char bc1q multisig address.
export const WALLET_ID = 'bench-wallet-7f3a9c2e41d84b6f';
export const SYNC_RECORD = {
  chain: 'btc',
  walletIdentity: WALLET_ID,
  keyXpub:
    'xpub6' +
    'D4BDPcP2GT577Vvch3R8wDkScZWzQzMMUm3PWbmWvVJrZwQY4VUNgqFJPMM3No2dFDFGTsxxpG5uJh7n7epu4trkrX7x7D'.padEnd(
      106,
      'q',
    ),
  wkIdentity: 'bc1q' + 'x'.repeat(58),
  generatedAddress: 'bc1q' + 'ar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq'.slice(0, 38),
};
// A 10 KB signing request: a `tx` on a UTXO chain carries a hex payload and a derivation path.
export const ACTION_BODY = JSON.stringify({
  chain: 'btc',
  wkIdentity: SYNC_RECORD.wkIdentity,
  action: 'tx',
  payload: '0a'.repeat(5 * 1024),
  path: '0-0',
});
// The same request under a type the action table does not route: stored and answered alike, but no push job.
export const UNROUTED_BODY = JSON.stringify({ ...(JSON.parse(ACTION_BODY) as object), action: 'benchnote' });
export const JSON_HEADERS = { 'content-type': 'application/json' };

export async function seedSync(relay: Child): Promise<void> {
  // Re-seeded before every run: the first read cuts the record's lifetime to the read grace (120 s).
  const res = await fetch(`${relay.url}/v1/sync`, {
    method: 'POST',
    headers: JSON_HEADERS,
    body: JSON.stringify(SYNC_RECORD),
  });
  if (res.status !== 200)
    throw new Error(`seeding POST /v1/sync answered ${res.status}: ${await res.text()}`);
}

/** Both servers must answer the same data before their speed means anything. */
export async function checkSameAnswer(relay: Child, bare: Child): Promise<void> {
  const answer = (c: Child) => fetch(`${c.url}/v1/sync/${WALLET_ID}`).then((r) => r.text());
  const [a, b] = await Promise.all([answer(relay), answer(bare)]);
  const expected = JSON.stringify({ success: true, data: SYNC_RECORD });
  if (a !== expected || b !== expected) {
    throw new Error(`relay and bare answer differently: ${a} vs ${b}`);
  }
}

export async function actionAvailable(relay: Child): Promise<boolean> {
  const res = await fetch(`${relay.url}/v1/action`, {
    method: 'POST',
    headers: JSON_HEADERS,
    body: ACTION_BODY,
  });
  if (res.status === 200) return true;
  if (res.status === 404 || res.status === 405) return false;
  throw new Error(`POST /v1/action answered ${res.status}: ${await res.text()}`);
}

export const getSync = (target: Child, seconds: number, connections: number) =>
  drive(target.process.pid!, { url: `${target.url}/v1/sync/${WALLET_ID}`, connections, duration: seconds });
export const postAction = (target: Child, seconds: number, connections: number, body = ACTION_BODY) =>
  drive(target.process.pid!, {
    url: `${target.url}/v1/action`,
    connections,
    duration: seconds,
    method: 'POST',
    headers: JSON_HEADERS,
    body,
  });
