import { actionTypeRule, type Side } from '../action-types.js';
import { errorFields, type Logger } from '../log.js';
import { socketMetrics } from '../metrics.js';
import type { ActionStore } from '../store/action-store.js';
import type { ActionRecord } from '../types.js';
import type { RelayServer } from './types.js';

/** The server-side event that tells the other pods of a path that a pair's mailbox has a new record. */
export const STORED_NOTICE = 'relay:action-stored';

/** What crosses Redis instead of the record: enough to find it in the mailbox and to tell it from a newer one. */
interface StoredNotice {
  wkIdentity: string;
  action: string;
  createdAt: string;
}

const isNotice = (value: unknown): value is StoredNotice =>
  typeof value === 'object' &&
  value !== null &&
  ['wkIdentity', 'action', 'createdAt'].every(
    (field) => typeof (value as Record<string, unknown>)[field] === 'string',
  );

/**
 * Emits each stored action to its pair's room on the side the table names (docs/api.md#delivery-and-replay), on every pod.
 *
 * The record is already in Redis, so only a small notice crosses the adapter: the pods that hold a socket of the
 * room read the record from the mailbox and deliver it locally. Broadcasting the record itself cost the storing
 * pod two more serializations of a payload of up to 1 MB and a publish of it, for every action, whether or not
 * any pod held a socket of the room (docs/benchmarks.md).
 */
export class ActionEmitter {
  private readonly servers = new Map<Side, RelayServer>();

  constructor(
    private readonly store: ActionStore,
    private readonly log: Logger,
  ) {}

  serve(side: Side, io: RelayServer): void {
    this.servers.set(side, io);
    io.on(STORED_NOTICE, (notice: unknown) => {
      if (isNotice(notice)) void this.storedElsewhere(io, notice);
    });
  }

  /**
   * Called once the record is stored. Never throws, and the emit runs after the current request's response is
   * written (setImmediate), so it adds nothing to the POST's latency.
   */
  stored(record: ActionRecord): void {
    const rule = actionTypeRule(record.action);
    if (!rule) return;
    setImmediate(() => this.emit(rule.side, record));
  }

  private emit(side: Side, record: ActionRecord): void {
    // Not serving yet: the adapter's Redis connections were never ready, so no socket can be in the room.
    const io = this.servers.get(side);
    if (!io) return;
    try {
      const notice: StoredNotice = {
        wkIdentity: record.wkIdentity,
        action: record.action,
        createdAt: record.createdAt,
      };
      io.serverSideEmit(STORED_NOTICE, notice);
      this.deliver(io, record);
    } catch (err) {
      this.log.error('socket emit failed', { action: record.action, ...errorFields(err) });
    }
  }

  /** Another pod stored an action: deliver it here if this pod holds a socket of the room. */
  private async storedElsewhere(io: RelayServer, notice: StoredNotice): Promise<void> {
    if (!io.sockets.adapter.rooms.has(notice.wkIdentity)) return;
    let json: string | null;
    try {
      json = await this.store.readJson(notice.wkIdentity);
    } catch (err) {
      // The app still finds the record through GET, and a key app through the replay on its next join.
      this.log.warn('socket event skipped: mailbox unreadable', {
        action: notice.action,
        ...errorFields(err),
      });
      return;
    }
    if (json === null) return;
    const record = JSON.parse(json) as ActionRecord;
    // Replaced since (by the reply, or a newer request): that record has a notice of its own.
    if (record.createdAt !== notice.createdAt || record.action !== notice.action) return;
    this.deliver(io, record);
  }

  private deliver(io: RelayServer, record: ActionRecord): void {
    if (!io.sockets.adapter.rooms.has(record.wkIdentity)) return;
    io.local.to(record.wkIdentity).emit(record.action, record);
    socketMetrics.emitted(record.action, 'live');
  }
}
