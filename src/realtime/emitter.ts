import { actionTypeRule } from '../mailbox/index.js';
import type { Side } from '../core/sides.js';
import { errorFields, type Logger } from '../core/log.js';
import type { ActionRecord } from '../core/types.js';
import { deliverToRoom } from './deliveries.js';
import type { RelayServer } from './types.js';

/** The server-side event that hands a stored action record to the other pods of a path. */
export const STORED_NOTICE = 'relay:action-stored';

/**
 * The records stored in one turn of the event loop go out in one notice, up to this many bytes of records (a
 * larger record goes alone): under load one publish, and one message for every pod to unpack, carries dozens.
 */
const NOTICE_BYTES = 256 * 1024;

/** A notice's entry: the pair's identity beside the record, so a pod without a socket of the room parses nothing. */
type NoticeEntry = [wkIdentity: string, record: Buffer];

interface Stored {
  side: Side;
  record: ActionRecord;
  json: string;
}

/**
 * Emits each stored action to its pair's room on the side the table names, on every pod
 * (docs/api.md#delivery-and-replay).
 *
 * The notice carries the records themselves (their stored JSON text, so the storing pod serializes nothing
 * again): a pod that looked the record up in the mailbox would miss every record a later POST replaced before
 * the notice arrived, and an acknowledged request must reach every socket of the room even then. The
 * cost on the write path is measured in docs/benchmarks.md.
 */
export class ActionEmitter {
  private readonly servers = new Map<Side, RelayServer>();
  private queued: Stored[] = [];

  constructor(private readonly log: Logger) {}

  serve(side: Side, io: RelayServer): void {
    this.servers.set(side, io);
    io.on(STORED_NOTICE, (entries: unknown) => {
      if (!Array.isArray(entries)) return;
      for (const entry of entries as unknown[]) {
        if (!Array.isArray(entry)) continue;
        const [wkIdentity, json] = entry as unknown[];
        if (typeof wkIdentity !== 'string' || !io.sockets.adapter.rooms.has(wkIdentity)) continue;
        if (typeof json === 'string' || Buffer.isBuffer(json)) this.storedElsewhere(io, json.toString());
      }
    });
  }

  /**
   * Called once the record is stored, with its stored JSON text. Never throws, and the emit runs after the
   * current turn's responses are written (setImmediate), so it adds nothing to the POST's latency. Records are
   * emitted in the order they were stored: each POST's record is queued before its answer is sent.
   */
  stored(record: ActionRecord, json: string): void {
    const rule = actionTypeRule(record.action);
    if (!rule) return;
    if (this.queued.length === 0) setImmediate(() => this.flush());
    this.queued.push({ side: rule.side, record, json });
  }

  private flush(): void {
    const queued = this.queued;
    this.queued = [];
    for (const [side, io] of this.servers) {
      const records = queued.filter((stored) => stored.side === side);
      if (records.length > 0) this.emit(io, records);
    }
    // A side not served yet had its adapter's Redis connections never ready: no socket can be in its rooms.
  }

  private emit(io: RelayServer, records: Stored[]): void {
    let entries: NoticeEntry[] = [];
    let bytes = 0;
    const publish = () => {
      if (entries.length === 0) return;
      // As bytes: the adapter then packs the notice with msgpack, where text would be JSON-escaped into it, and
      // every pod (the sender too, which receives its own publish) would parse every record before looking at
      // the identities. Bytes stay bytes until a pod holding a socket of the room decodes them.
      this.attempt(
        records.map((stored) => stored.record.action),
        () => io.serverSideEmit(STORED_NOTICE, entries),
      );
      entries = [];
      bytes = 0;
    };
    for (const { record, json } of records) {
      if (bytes > 0 && bytes + json.length > NOTICE_BYTES) publish();
      entries.push([record.wkIdentity, Buffer.from(json)]);
      bytes += json.length;
    }
    publish();
    for (const { record, json } of records) {
      this.attempt([record.action], () => deliverToRoom(io, record, json.length, 'live'));
    }
  }

  /** Runs one emit: a failure is logged, never thrown, and the other emits go on. */
  private attempt(actions: string[], emit: () => unknown): void {
    try {
      emit();
    } catch (err) {
      this.log.error('socket emit failed', { actions, ...errorFields(err) });
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
    deliverToRoom(io, record, json.length, 'live');
  }
}
