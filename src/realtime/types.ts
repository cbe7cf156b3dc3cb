import type { DefaultEventsMap, Server, Socket } from 'socket.io';
import type { Side } from '../core/sides.js';

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
}

/** What an event's sender asks of the pod's bound on unread bytes (Backlogs, in backlog.ts). */
export interface SocketBacklogs {
  admit(socket: RelaySocket, bytes: number): boolean;
  sent(socket: RelaySocket): void;
}

export type RelayServer = Server<DefaultEventsMap, DefaultEventsMap, DefaultEventsMap, SocketData>;
export type RelaySocket = Socket<DefaultEventsMap, DefaultEventsMap, DefaultEventsMap, SocketData>;
