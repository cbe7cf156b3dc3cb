import type { Side } from '../core/sides.js';
import { ackMetrics } from './metrics.js';
import type { AckBudget, AckResult, ActionStore, DeliveredEvent, ReceiptNotice } from './store.js';

/** Where receipts are told: the `delivered` event's notices (the socket emitter). */
export interface ReceiptEvents {
  /** Where the ack script publishes a first ack's notice of the pair's room; undefined when the caller must. */
  receiptNotice(wkIdentity: string): ReceiptNotice | undefined;
  /**
   * A first ack stored its receipt: the event goes to this pod's stream sockets of the sender side and, unless
   * the script `published` it, to the other pods. Never throws.
   */
  delivered(event: DeliveredEvent, json: string, published: boolean): void;
}

/**
 * An ack by socket or HTTP (docs/api.md#acks-and-receipts), once its caller checked who sends it: one script
 * spends the `budget` given, stores the first receipt and publishes its notice; a repeat stores and emits nothing
 * and answers the first. `side` acknowledges only records to it (undefined: either side's).
 */
export async function acknowledge(
  store: ActionStore,
  events: ReceiptEvents,
  via: 'socket' | 'http',
  wkIdentity: string,
  id: string,
  side: Side | undefined,
  budget?: AckBudget,
): Promise<AckResult> {
  const result = await store.acknowledge(wkIdentity, id, side, events.receiptNotice(wkIdentity), budget);
  // A record to the other side: a socket has none on its path; HTTP refuses the token with a 401, counted there.
  if (result === 'other_side') {
    if (via === 'socket') ackMetrics.counted(via, 'not_found');
    return result;
  }
  if (typeof result === 'string') {
    ackMetrics.counted(via, result);
    return result;
  }
  ackMetrics.counted(via, result.first ? 'recorded' : 'repeat');
  if (result.first) events.delivered(result.event, result.json, result.published);
  return result;
}
