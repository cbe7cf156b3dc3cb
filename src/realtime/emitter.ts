import { actionTypeRule, type Side } from '../action-types.js';
import { errorFields, type Logger } from '../log.js';
import type { ActionRecord } from '../types.js';
import { deliverToRoom } from './deliveries.js';
import type { RelayServer } from './types.js';

/** The server-side event that hands a stored action record to the other pods of a path. */
export const STORED_NOTICE = 'relay:action-stored';

/**
 * Emits each stored action to its pair's room on the side the table names, on every pod
 * (docs/api.md#delivery-and-replay).
 *
 * The notice carries the record itself (its stored JSON text, so the storing pod serializes nothing again): a
 * pod that looked the record up in the mailbox instead lost every record a later POST had replaced by the time
 * the notice arrived, and an acknowledged request must reach every socket of the room even then. The cost on
 * the write path is measured in docs/benchmarks.md.
 */
export class ActionEmitter {
  private readonly servers = new Map<Side, RelayServer>();

  constructor(private readonly log: Logger) {}

  serve(side: Side, io: RelayServer): void {
    this.servers.set(side, io);
    // The pair's identity travels beside the record, so a pod without a socket of the room parses nothing.
    io.on(STORED_NOTICE, (wkIdentity: unknown, json: unknown) => {
      if (typeof wkIdentity !== 'string') return;
      if (typeof json !== 'string' && !Buffer.isBuffer(json)) return;
      if (io.sockets.adapter.rooms.has(wkIdentity)) this.storedElsewhere(io, json.toString());
    });
  }

  /**
   * Called once the record is stored, with its stored JSON text. Never throws, and the emit runs after the
   * current request's response is written (setImmediate), so it adds nothing to the POST's latency. Records are
   * emitted in the order they were stored: each POST's emit is queued before its answer is sent.
   */
  stored(record: ActionRecord, json: string): void {
    const rule = actionTypeRule(record.action);
    if (!rule) return;
    setImmediate(() => this.emit(rule.side, record, json));
  }

  private emit(side: Side, record: ActionRecord, json: string): void {
    // Not serving yet: the adapter's Redis connections were never ready, so no socket can be in the room.
    const io = this.servers.get(side);
    if (!io) return;
    try {
      // As bytes: the adapter then packs the notice with msgpack, where text would be JSON-escaped into it, and
      // every pod (the sender too, which receives its own publish) would parse the whole record before looking at
      // the identity. Bytes stay bytes until a pod holding a socket of the room decodes them.
      io.serverSideEmit(STORED_NOTICE, record.wkIdentity, Buffer.from(json));
      deliverToRoom(io, record, 'live');
    } catch (err) {
      this.log.error('socket emit failed', { action: record.action, ...errorFields(err) });
    }
  }

  /** Another pod stored an action and this pod holds a socket of its room. */
  private storedElsewhere(io: RelayServer, json: string): void {
    let record: ActionRecord;
    try {
      record = JSON.parse(json) as ActionRecord;
    } catch {
      return;
    }
    if (typeof record?.wkIdentity !== 'string' || typeof record.id !== 'string') return;
    deliverToRoom(io, record, 'live');
  }
}
