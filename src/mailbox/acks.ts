import type { Side } from '../core/sides.js';
import { ackMetrics } from './metrics.js';
import type { AckResult, ActionStore, DeliveredEvent, ReceiptNotice } from './store.js';

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
 * stores the first receipt and publishes its notice; a repeat stores and emits nothing and answers the first.
 */
export async function acknowledge(
  store: ActionStore,
  events: ReceiptEvents,
  via: 'socket' | 'http',
  wkIdentity: string,
  id: string,
  directions: Side | 'both',
): Promise<AckResult> {
  const result = await store.acknowledge(wkIdentity, id, directions, events.receiptNotice(wkIdentity));
  ackMetrics.counted(via, result === undefined ? 'not_found' : result.first ? 'recorded' : 'repeat');
  if (result?.first) events.delivered(result.event, result.json, result.published);
  return result;
}
