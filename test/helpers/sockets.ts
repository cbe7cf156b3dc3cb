import { io, type ManagerOptions, type Socket, type SocketOptions } from 'socket.io-client';
import type { Side } from '../../src/core/sides.js';
import { registry } from '../../src/core/metrics.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { redis } from './redis.js';
import { waitFor } from './wait.js';

export interface Received {
  event: string;
  data: unknown;
}

export interface TestClient {
  socket: Socket;
  /** Every event the relay sent, in order. */
  received: Received[];
  /** The reason of every disconnect, in order. */
  disconnects: string[];
  connectErrors: string[];
  close(): void;
}

/**
 * A client as the apps make it: socket.io-client 4.8.1 with their options and default transports (polling,
 * then the upgrade), sending `join` on every `connect`.
 */
export function connectClient(
  base: string,
  side: Side,
  wkIdentity: unknown,
  extra: Partial<ManagerOptions & SocketOptions> = {},
): TestClient {
  const socket = io(base, {
    path: `/v1/socket/${side}`,
    reconnectionAttempts: 100,
    timeout: 10000,
    ...extra,
  });
  const client: TestClient = {
    socket,
    received: [],
    disconnects: [],
    connectErrors: [],
    close: () => socket.close(),
  };
  socket.on('connect', () => {
    if (wkIdentity !== undefined) socket.emit('join', wkIdentity);
  });
  socket.onAny((event: string, data: unknown) => client.received.push({ event, data }));
  socket.on('disconnect', (reason) => client.disconnects.push(reason));
  socket.on('connect_error', (err) => client.connectErrors.push(err.message));
  return client;
}

/** `connectClient` for a test file: every client it made is closed after each test. */
export function closedAfterEach(): typeof connectClient {
  const made: TestClient[] = [];
  afterEach(() => {
    for (const client of made.splice(0)) client.close();
  });
  return (...args) => {
    const client = connectClient(...args);
    made.push(client);
    return client;
  };
}

/** `join` events fully handled (replay included) by every API of this process so far. */
export async function joinsHandled(outcome = 'joined'): Promise<number> {
  const metric = await registry.getSingleMetric('relay_socket_joins_total')!.get();
  return metric.values.filter((v) => v.labels.outcome === outcome).reduce((sum, v) => sum + v.value, 0);
}

/** Waits until `count` more joins than `before` were handled. */
export async function joinsSettled(before: number, count: number, outcome = 'joined'): Promise<void> {
  await waitFor(`${count} socket joins`, async () => (await joinsHandled(outcome)) >= before + count);
}

/** How many pods subscribe to a pair room's channel on a path (the pods a notice of its stored records reaches). */
export async function roomSubscribers(side: Side, room: string, keyPrefix = 'relay:'): Promise<number> {
  const reply = (await redis().call('PUBSUB', 'SHARDNUMSUB', keysFor(keyPrefix).roomChannel(side, room))) as [
    string,
    number,
  ];
  return Number(reply[1]);
}

export async function connected(...clients: TestClient[]): Promise<void> {
  await waitFor('sockets connected', () => clients.every((c) => c.socket.connected));
}

/**
 * A socket on `side`, made by `connect` without a join of its own, that sends `join` with an acknowledgement: the
 * socket and the answer (which follows the replay, for a join with since).
 */
export async function joinAnswered<Answer = unknown>(
  connect: typeof connectClient,
  base: string,
  side: Side,
  join: unknown,
): Promise<{ socket: TestClient; answer: Answer }> {
  const socket = connect(base, side, undefined);
  await connected(socket);
  const answer = (await socket.socket.timeout(5000).emitWithAck('join', join)) as Answer;
  return { socket, answer };
}

/** The events named `event` a client received, as their data. */
export function dataOf(client: TestClient, event?: string): unknown[] {
  return client.received.filter((r) => event === undefined || r.event === event).map((r) => r.data);
}
