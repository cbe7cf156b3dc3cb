import type { DefaultEventsMap, Server, Socket } from 'socket.io';

/** What the relay keeps per socket. */
export interface SocketData {
  /** The client address by the HTTP rule (TRUST_PROXY_HOPS; IPv6: its /64), for the per-IP join budget. */
  ip: string;
  /** Keys of the action records sent to this socket (key path only): see deliveries.ts. */
  delivered?: Set<string>;
}

export type RelayServer = Server<DefaultEventsMap, DefaultEventsMap, DefaultEventsMap, SocketData>;
export type RelaySocket = Socket<DefaultEventsMap, DefaultEventsMap, DefaultEventsMap, SocketData>;
