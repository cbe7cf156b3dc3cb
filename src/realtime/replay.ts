import { actionTypeRule } from '../action-types.js';
import { errorFields, type Logger } from '../log.js';
import { socketMetrics } from '../metrics.js';
import type { ActionStore } from '../store/action-store.js';
import type { ActionRecord } from '../types.js';
import { wasDelivered } from './deliveries.js';
import type { RelaySocket } from './types.js';

/**
 * Replay (docs/api.md#delivery-and-replay): a key app coming back to the foreground gets the request it missed, on its own socket only,
 * unless the record expired, is not one the table replays, or this connection already had it.
 */
export class Replay {
  constructor(
    private readonly store: ActionStore,
    private readonly log: Logger,
  ) {}

  async toSocket(socket: RelaySocket, wkIdentity: string): Promise<void> {
    let json: string | null;
    try {
      json = await this.store.readJson(wkIdentity);
    } catch (err) {
      // Without Redis there is nothing to replay; the app still reads the mailbox through GET once it is back.
      this.log.warn('replay skipped: mailbox unreadable', errorFields(err));
      return;
    }
    if (json === null || !socket.connected) return;
    const record = JSON.parse(json) as ActionRecord;
    if (!actionTypeRule(record.action)?.replay) return;
    if (Date.parse(record.expiresAt) <= Date.now() || wasDelivered(socket, record)) return;
    socket.emit(record.action, record);
    socketMetrics.emitted(record.action, 'replay');
  }
}
