import { actionTypeRule, type Side } from '../action-types.js';
import { errorFields, type Logger } from '../log.js';
import { socketMetrics } from '../metrics.js';
import type { ActionRecord } from '../types.js';
import type { RelayServer } from './types.js';

/** Emits each stored action to its pair's room on the side the table names (SPEC §10). */
export class ActionEmitter {
  private readonly servers = new Map<Side, RelayServer>();

  constructor(private readonly log: Logger) {}

  serve(side: Side, io: RelayServer): void {
    this.servers.set(side, io);
  }

  /**
   * Called once the record is stored. Never throws, and the emit runs after the current request's response is
   * written (setImmediate), so serializing the event and publishing it through Redis add nothing to the POST.
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
      io.to(record.wkIdentity).emit(record.action, record);
      socketMetrics.emitted(record.action, 'live');
    } catch (err) {
      this.log.error('socket emit failed', { action: record.action, ...errorFields(err) });
    }
  }
}
