import { io, type Socket } from 'socket.io-client';
import { CLOSED_BEFORE_JOIN, JoinError, SessionEnded } from './errors.js';
import { signBody, type PairKeys } from './signing.js';
import type {
  ActionRecord,
  Delivered,
  JoinedAnswer,
  PresenceChange,
  Receipt,
  StreamPosition,
} from './types.js';

/** The key app listens on `/v1/socket/key` for requests, the wallet on `/v1/socket/wallet` for replies. */
export type Side = 'key' | 'wallet';

export interface EventOptions {
  /** The pair whose room to join. */
  wkIdentity: string;
  /** Signs every join (purpose `join`) with the pair's keys: a fresh nonce on each connection. */
  sign?: PairKeys;
  /**
   * Joins as a stream socket from this position (docs/api.md#resuming-the-stream): only a stream socket gets
   * `delivered` and `presence` events. `{ offset: 0 }` for none. A reconnect joins from the last position reached.
   */
  since?: { epoch?: string; offset: number };
  /**
   * With `since`: called with the direction's position each time it advances, for the app to persist it and pass
   * it as `since` next time: after each record's handlers ran, on a join's answer (the position it replayed up
   * to), and when the direction started a new epoch.
   */
  onPosition?: (position: StreamPosition) => void;
  /**
   * Called each time the relay acknowledges a join: once per connection (a reconnect is a new connection), with
   * the answer: the direction's position and the other side's presence (`peer`); with `since` also `recovered` and
   * `replayed`.
   */
  onJoined?: (answer: JoinedAnswer) => void;
  /** The relay refused the join for good (`AUTH_*`, `INVALID_PARAMETER`): the socket is closed, not reconnected. */
  onRefused?: (code: string) => void;
  /** After a refusal worth retrying (the relay closed the socket), connect again this much later (default 5000 ms). */
  rejoinDelayMs?: number;
}

/** A session's token for the joins of its pair and side (docs/api.md#sessions). */
export interface JoinToken {
  /** The token to join with now; rejects with SessionEnded once the session is over. */
  token(): Promise<string>;
  /** After a join refused AUTH_EXPIRED: resolves when the session holds (its token renewed if it ran out). */
  confirm(): Promise<void>;
}

/** The relay's answer to a join (docs/api.md#join-and-leave). */
type JoinAnswer = Partial<JoinedAnswer> & { ok?: unknown; code?: unknown };

/** The relay's answer to an ack (docs/api.md#acks-and-receipts). */
interface AckAnswer {
  ok?: unknown;
  code?: unknown;
  delivered?: Receipt;
}

/** Codes no retry of the same join can change: a signature refused, or a `wkIdentity` that is no identifier. */
const isFinal = (code: string) => code.startsWith('AUTH_') || code === 'INVALID_PARAMETER';

/**
 * The relay's events for one pair (docs/api.md#real-time-events): socket.io with the apps' options, a `join` on
 * every connection (a reconnect is a new connection), one handler per action type.
 */
export class RelayEvents {
  readonly socket: Socket;
  /**
   * The first join's outcome: resolves once the relay acknowledged it (a record stored from then on reaches this
   * socket); rejects with a `JoinError` when the relay refused it for good or `close()` came first. A refusal
   * worth retrying (`RATE_LIMITED`, `UNAVAILABLE`) is retried, and this waits on.
   */
  readonly joined: Promise<void>;
  private settleJoined!: { resolve: () => void; reject: (err: JoinError) => void };
  /** With `since`: the last position reached, which each join sends. */
  private position: { epoch?: string; offset: number } | undefined;
  private inRoom = true;
  private closed = false;
  private rejoin: ReturnType<typeof setTimeout> | undefined;

  constructor(
    baseUrl: string,
    private readonly side: Side,
    private readonly options: EventOptions,
    /** Joins carry this session's token instead of a signature (RelaySession.connectEvents gives it). */
    private readonly session?: JoinToken,
  ) {
    this.joined = new Promise((resolve, reject) => {
      this.settleJoined = { resolve, reject };
    });
    // Handled here too, so that a caller who never awaits it does not get an unhandled rejection.
    this.joined.catch(() => undefined);
    this.position = options.since;
    this.socket = io(baseUrl, { path: `/v1/socket/${side}`, reconnectionAttempts: 100, timeout: 10000 });
    // The stream's own events carry another direction's position (`delivered`) or none (`presence`).
    if (this.position) {
      this.socket.onAny((event: string, record: Partial<ActionRecord> | undefined) => {
        if (event !== 'delivered' && event !== 'presence') this.advanceLater(record?.epoch, record?.offset);
      });
    }
    this.socket.on('connect', () => {
      if (this.inRoom) this.join();
    });
    this.socket.on('disconnect', (reason) => {
      // The relay closed the socket (a join it refused): socket.io-client does not reconnect by itself.
      if (reason === 'io server disconnect' && !this.closed) {
        this.rejoin = setTimeout(() => this.socket.connect(), this.rejoinDelay);
      }
    });
  }

  private get rejoinDelay(): number {
    return this.options.rejoinDelayMs ?? 5000;
  }

  /** Calls `handler` with the stored record of every action of this type the relay emits to the pair. */
  on(type: string, handler: (record: ActionRecord) => void): this {
    this.socket.on(type, handler);
    return this;
  }

  /**
   * Calls `handler` for each `delivered` event: a record this side sent was acknowledged by the other app. Only a
   * stream socket (`since`) gets them.
   */
  onDelivered(handler: (delivered: Delivered) => void): this {
    this.socket.on('delivered', handler);
    return this;
  }

  /**
   * Acknowledges the record `id` the relay sent this side (docs/api.md#acks-and-receipts); the join must have been
   * signed (`sign`), unless the relay runs `AUTH_ROUTES=ack=off`. Resolves with the (first) receipt; rejects with
   * a `JoinError` naming the relay's code (`NOT_FOUND`, `AUTH_REQUIRED`, `RATE_LIMITED`, …).
   */
  async ack(id: string, timeoutMs = 10_000): Promise<Receipt> {
    const answer = (await this.socket
      .timeout(timeoutMs)
      .emitWithAck('ack', { wkIdentity: this.options.wkIdentity, id })) as AckAnswer | undefined;
    if (answer?.ok === true && answer.delivered) return answer.delivered;
    const code = typeof answer?.code === 'string' ? answer.code : 'UNEXPECTED_RESPONSE';
    throw new JoinError(code, `the relay refused the ack on /v1/socket/${this.side}: ${code}`);
  }

  /**
   * Calls `handler` when the other side of the pair goes connected or not connected (docs/api.md#presence). The
   * relay sends it only to sockets that joined with a position (`since`).
   */
  onPresence(handler: (change: PresenceChange) => void): this {
    this.socket.on('presence', handler);
    return this;
  }

  /** Leaves the pair's room, and joins it no more on reconnects. */
  leave(): void {
    this.inRoom = false;
    this.socket.emit('leave', { wkIdentity: this.options.wkIdentity });
  }

  close(): void {
    this.end(new JoinError(CLOSED_BEFORE_JOIN, 'closed before the relay acknowledged a join'));
  }

  private end(reason: JoinError): void {
    this.settleJoined.reject(reason);
    this.closed = true;
    clearTimeout(this.rejoin);
    this.socket.disconnect();
  }

  /**
   * Reports the position when it moved on (a higher offset, or a new epoch), once the handlers of what came
   * before it ran: listeners of any event run before the event's own, and a join's answer follows its replay.
   */
  private advanceLater(epoch: unknown, offset: unknown, lost = false): void {
    queueMicrotask(() => this.advance(epoch, offset, lost));
  }

  /** `lost`: a join the relay did not recover; its position replaces this one even when lower (a failover lost it). */
  private advance(epoch: unknown, offset: unknown, lost = false): void {
    if (typeof epoch !== 'string' || typeof offset !== 'number' || !this.position) return;
    const stale = lost ? offset === this.position.offset : offset <= this.position.offset;
    if (epoch === this.position.epoch && stale) return;
    this.position = { epoch, offset };
    this.options.onPosition?.({ epoch, offset });
  }

  private join(): void {
    const since = this.position;
    const data = { wkIdentity: this.options.wkIdentity, ...(since ? { since } : {}) };
    if (!this.session) {
      this.emitJoin(this.options.sign ? { ...data, ...signBody(data, 'join', this.options.sign) } : data);
      return;
    }
    this.session.token().then(
      // A socket.io emit while disconnected would wait and go out on the next connection, beside its own join.
      (token) => this.socket.connected && !this.closed && this.emitJoin({ ...data, token }),
      (err: unknown) => {
        if (err instanceof SessionEnded) this.refuse(err.code);
        // The token could not be renewed yet: joined again later on this connection.
        else this.rejoin = setTimeout(() => this.socket.connected && this.join(), this.rejoinDelay);
      },
    );
  }

  private emitJoin(data: Record<string, unknown>): void {
    this.socket.emit('join', data, (answer: JoinAnswer | undefined) => {
      if (answer?.ok === true) {
        this.settleJoined.resolve();
        const { epoch = null, offset = 0, peer = { connected: false, lastSeen: null } } = answer;
        const { recovered, replayed } = answer;
        // Sent after the replay: the position the socket has reached.
        this.advanceLater(epoch, offset, recovered === false);
        this.options.onJoined?.({
          epoch,
          offset,
          peer,
          ...(typeof recovered === 'boolean' ? { recovered } : {}),
          ...(typeof replayed === 'number' ? { replayed } : {}),
        });
      } else if (answer?.code === 'AUTH_EXPIRED' && this.session) {
        // An ended session refuses for good; a token that ran out is renewed, and the reconnect joins with it.
        this.session.confirm().catch(() => this.refuse('AUTH_EXPIRED'));
      } else if (typeof answer?.code === 'string' && isFinal(answer.code)) {
        this.refuse(answer.code);
      }
    });
  }

  private refuse(code: string): void {
    this.end(new JoinError(code, `the relay refused the join on /v1/socket/${this.side}: ${code}`));
    this.options.onRefused?.(code);
  }
}
