import { io, type Socket } from 'socket.io-client';
import { signBody, type PairKeys } from './signing.js';
import type { ActionRecord } from './types.js';

/** The key app listens on `/v1/socket/key` for requests, the wallet on `/v1/socket/wallet` for replies. */
export type Side = 'key' | 'wallet';

export interface EventOptions {
  /** The pair whose room to join. */
  wkIdentity: string;
  /** Signs every join (purpose `join`) with the pair's keys: a fresh nonce on each connection. */
  sign?: PairKeys;
  /** The relay refused the join for good (an `AUTH_*` code): the socket is closed and not reconnected. */
  onRefused?: (code: string) => void;
  /** After the relay closed the socket without saying why, connect again this much later (default 5000 ms). */
  rejoinDelayMs?: number;
}

/** A join's acknowledgement, from relays that send one; without it the join is taken as made. */
interface JoinAck {
  ok?: unknown;
  code?: unknown;
}

/**
 * The relay's events for one pair (docs/api.md#real-time-events): socket.io with the apps' options, a `join` on
 * every connection (a reconnect is a new connection), one handler per action type.
 */
export class RelayEvents {
  readonly socket: Socket;
  private inRoom = true;
  private closed = false;
  private rejoin: ReturnType<typeof setTimeout> | undefined;

  constructor(
    baseUrl: string,
    side: Side,
    private readonly options: EventOptions,
  ) {
    this.socket = io(baseUrl, { path: `/v1/socket/${side}`, reconnectionAttempts: 100, timeout: 10000 });
    this.socket.on('connect', () => {
      if (this.inRoom) this.join();
    });
    this.socket.on('disconnect', (reason) => {
      // The relay closed the socket (a join it refused): socket.io-client does not reconnect by itself.
      if (reason === 'io server disconnect' && !this.closed) {
        this.rejoin = setTimeout(() => this.socket.connect(), this.options.rejoinDelayMs ?? 5000);
      }
    });
  }

  /** Calls `handler` with the stored record of every action of this type the relay emits to the pair. */
  on(type: string, handler: (record: ActionRecord) => void): this {
    this.socket.on(type, handler);
    return this;
  }

  /** Leaves the pair's room, and joins it no more on reconnects. */
  leave(): void {
    this.inRoom = false;
    this.socket.emit('leave', { wkIdentity: this.options.wkIdentity });
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.rejoin);
    this.socket.disconnect();
  }

  private join(): void {
    const data = { wkIdentity: this.options.wkIdentity };
    const sent = this.options.sign ? { ...data, ...signBody(data, 'join', this.options.sign) } : data;
    this.socket.emit('join', sent, (ack: JoinAck | undefined) => {
      if (ack?.ok === false && typeof ack.code === 'string' && ack.code.startsWith('AUTH_')) {
        this.close();
        this.options.onRefused?.(ack.code);
      }
    });
  }
}
