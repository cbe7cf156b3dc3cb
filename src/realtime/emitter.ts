import { actionTypeRule } from '../action-types/index.js';
import { OTHER_SIDE, type Side } from '../core/sides.js';
import { errorFields, type Logger } from '../core/log.js';
import type { ActionEvents, ActionRecord, DeliveredEvent, ReceiptNotice } from '../mailbox/index.js';
import { deliverReceipt, deliverToRoom } from './deliveries.js';
import type { RoomChannels } from './room-channels.js';
import type { RelayServer } from './types.js';

interface Stored {
  side: Side;
  record: ActionRecord;
  json: string;
}

/**
 * Emits each stored action to its pair's room on the side the table names, on this pod and, through the room's
 * channel, on every pod holding a socket of the room (docs/api.md#delivery-and-replay).
 *
 * The notice carries the record itself (its stored JSON text, so the storing pod serializes nothing again): a pod
 * that looked the record up in the mailbox would miss every record a later POST replaced before the notice
 * arrived, and an acknowledged request must reach every socket of the room even then.
 */
export class ActionEmitter implements ActionEvents {
  private readonly servers = new Map<Side, RelayServer>();
  private queued: Stored[] = [];

  constructor(
    private readonly channels: RoomChannels,
    private readonly log: Logger,
  ) {}

  serve(side: Side, io: RelayServer): void {
    this.servers.set(side, io);
  }

  /**
   * Called once the record is stored, with its stored JSON text, before its POST is answered. Never throws. The
   * notice to the other pods is handed to the publisher here, so the adapter closes after it (closeAdapter waits
   * for it); this pod's own sockets get the event after the current turn's responses are written (setImmediate).
   * Records are published and emitted in the order they were stored.
   */
  stored(record: ActionRecord, json: string): void {
    const rule = actionTypeRule(record.action);
    if (!rule) return;
    this.channels.publish(rule.side, record, json);
    if (this.queued.length === 0) setImmediate(() => this.flush());
    this.queued.push({ side: rule.side, record, json });
  }

  receiptNotice(wkIdentity: string): ReceiptNotice | undefined {
    return this.channels.receiptNotice(wkIdentity);
  }

  /**
   * A first ack stored its receipt: the `delivered` event goes to the stream sockets of the sender side's room on
   * this pod and, unless the ack script published its notice, to the other pods.
   */
  delivered(event: DeliveredEvent, json: string, published: boolean): void {
    const side = OTHER_SIDE[event.side];
    if (!published) this.channels.publishNotice(side, event.wkIdentity, 'delivered', json);
    const io = this.servers.get(side);
    if (io) this.attempt('delivered', () => deliverReceipt(io, event));
  }

  private flush(): void {
    const queued = this.queued;
    this.queued = [];
    for (const [side, io] of this.servers) {
      const records = queued.filter((stored) => stored.side === side);
      if (records.length > 0) this.emit(io, records);
    }
    // A side not served yet had its room channels' Redis connections never ready: no socket can be in its rooms.
  }

  private emit(io: RelayServer, records: Stored[]): void {
    for (const { record, json } of records) {
      this.attempt(record.action, () => deliverToRoom(io, record, Buffer.byteLength(json), 'live'));
    }
  }

  /** Runs one emit: a failure is logged, never thrown, and the other emits go on. */
  private attempt(action: string, emit: () => unknown): void {
    try {
      emit();
    } catch (err) {
      this.log.error('socket emit failed', { action, ...errorFields(err) });
    }
  }
}
