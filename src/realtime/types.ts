import type { DefaultEventsMap, Server, Socket } from 'socket.io';
import type { Side } from '../core/sides.js';
import type { ActionRecord } from '../mailbox/index.js';

/** What the relay keeps per socket. */
interface SocketData {
  /** The path the socket is on. */
  side: Side;
  /** The client address by the HTTP rule (TRUST_PROXY_HOPS; IPv6: its /64), for the per-IP join budget. */
  ip: string;
  /** Ids of the last action records sent to this connection: see deliveries.ts. */
  delivered?: Set<string>;
  /** The pod's bound on what sockets hold unread: every event goes through it. */
  backlogs: SocketBacklogs;
  /** Per pair room this socket joined with a position: what orders its records (stream-cursor.ts). */
  cursors?: Map<string, RoomCursor>;
  /**
   * Per pair room this socket joined: whether it is authenticated for its path's side (its latest join there was
   * verified, or AUTH_ROUTES says `ack=off`): only then may it acknowledge the room's records.
   */
  authenticated?: Map<string, boolean>;
  /** Per pair room this socket is counted in (presence.ts): whether it counts as ack-capable. */
  presence?: Map<string, boolean>;
}

/** What a live record of a room asks of a stream socket's position in it (StreamCursor, in stream-cursor.ts). */
export interface RoomCursor {
  /** Sends `record` (`bytes` of stored JSON) once every record before it was sent. */
  offer(record: ActionRecord, bytes: number): void;
  /** Sends, in order, what the socket misses from the stream (after the pod did not hear its room a while). */
  catchUp(): Promise<void>;
  /** The socket left the room: nothing more is sent or read for it. */
  stop(): void;
}

/** What an event's sender asks of the pod's bound on unread bytes (Backlogs, in backlog.ts). */
export interface SocketBacklogs {
  admit(socket: RelaySocket, bytes: number): boolean;
  sent(socket: RelaySocket): void;
}

export type RelayServer = Server<DefaultEventsMap, DefaultEventsMap, DefaultEventsMap, SocketData>;
export type RelaySocket = Socket<DefaultEventsMap, DefaultEventsMap, DefaultEventsMap, SocketData>;
