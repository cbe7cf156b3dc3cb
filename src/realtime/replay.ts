import { actionTypeRule } from '../action-types/index.js';
import type { ActionRecord, ActionStore } from '../mailbox/index.js';
import { errorFields, type Logger } from '../core/log.js';
import { deliverToRoom, sendOnce } from './deliveries.js';
import type { RelayServer, RelaySocket } from './types.js';

/** How many rooms' mailboxes or streams one recovery reads at a time. */
const RECOVERY_READS = 16;

/** Runs `read` for every item, RECOVERY_READS at a time: a recovery never floods Redis. */
export async function inBatches<T>(items: T[], read: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += RECOVERY_READS) {
    await Promise.all(items.slice(i, i + RECOVERY_READS).map(read));
  }
}

/**
 * Replay (docs/api.md#delivery-and-replay): a key app coming back to the foreground gets the request it
 * missed, on its own socket only, unless the record expired, is not one the table replays, or this connection
 * already had it. After a subscription gap the pod does the same for every key room it holds.
 */
export class Replay {
  constructor(
    private readonly store: ActionStore,
    private readonly log: Logger,
  ) {}

  async toSocket(socket: RelaySocket, wkIdentity: string): Promise<void> {
    const pending = await this.pending(wkIdentity);
    if (pending && socket.connected) sendOnce([socket], pending.record, pending.bytes, 'replay');
  }

  /**
   * The pod's room channels' subscription was interrupted (Redis restart, failover of its shard): notices published
   * meanwhile never reached it. Every key room it holds gets the pair's current key-bound record; the sockets
   * that had it already are skipped by its id.
   */
  async toRooms(io: RelayServer): Promise<void> {
    const rooms = [...io.sockets.adapter.rooms.keys()].filter((room) => !io.sockets.sockets.has(room));
    await inBatches(rooms, async (wkIdentity) => {
      const pending = await this.pending(wkIdentity);
      if (pending) deliverToRoom(io, pending.record, pending.bytes, 'replay');
    });
  }

  /** The mailbox's record, with its size, if it is one to replay and has not expired. */
  private async pending(wkIdentity: string): Promise<{ record: ActionRecord; bytes: number } | undefined> {
    let json: string | null;
    try {
      json = await this.store.readJson(wkIdentity);
    } catch (err) {
      // Without Redis there is nothing to replay; the app still reads the mailbox through GET once it is back.
      this.log.warn('replay skipped: mailbox unreadable', errorFields(err));
      return undefined;
    }
    if (json === null) return undefined;
    const record = JSON.parse(json) as ActionRecord;
    if (!actionTypeRule(record.action)?.replay) return undefined;
    return Date.parse(record.expiresAt) > Date.now() ? { record, bytes: Buffer.byteLength(json) } : undefined;
  }
}
