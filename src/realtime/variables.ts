import { int } from '../core/config/parsers.js';
import { API, MIB, variable, type ValuesOf } from '../core/config/variables.js';

/** The socket.io servers' variables: connections, handshakes, backlogs, rooms and cross-pod channels. */
export const REALTIME_VARIABLES = {
  SOCKETS_PER_IP: variable(int(1, 1_000_000), 50, {
    roles: API,
    doc: 'open socket.io connections per client IP on one pod; raise it where many users share an IP',
  }),
  SOCKET_HANDSHAKES_PER_MINUTE: variable(int(1, 1_000_000), 120, {
    roles: API,
    doc: 'new socket.io sessions per client IP and minute, shared by all pods (over it: 429)',
  }),
  SOCKET_CONNECT_TIMEOUT_MS: variable(int(500, 45_000), 5000, {
    roles: API,
    doc: 'a session not connected to its namespace by then is closed and frees its `SOCKETS_PER_IP` slot',
  }),
  // A socket must be able to hold the largest record (a 2 MiB action body and the fields the relay adds).
  SOCKET_BACKLOG_BYTES: variable(int(3 * MIB, 1024 * MIB), 4 * MIB, {
    roles: API,
    shown: '`4194304` (4 MiB)',
    doc: 'event bytes a socket that does not read may hold, and all sockets of a pod; past them it is disconnected and reconnects (docs/api.md#socket-limits)',
  }),
  SOCKET_BACKLOG_POD_BYTES: variable(int('SOCKET_BACKLOG_BYTES', 64 * 1024 * MIB), 128 * MIB, {
    roles: API,
    shown: '`134217728` (128 MiB)',
  }),
  SOCKET_CHANNEL_PARTITIONS: variable(int(0, 16_384), 0, {
    roles: API,
    doc: "cross-pod events: `0`, a Redis channel per pair room (a pod receives only its rooms' events); N, N hashed channels per path (fewer subscriptions, more events per pod: docs/operations.md#cross-pod-events)",
  }),
  SOCKET_ROOMS_MAX: variable(int(1, 10_000), 4, {
    roles: API,
    doc: 'pair rooms one socket may be in; a join past it disconnects the socket',
  }),
  PRESENCE_TTL_SECONDS: variable(int(15, 300), 45, {
    roles: API,
    doc: "how long the sockets of a pod that vanished still count in a side's presence; each pod renews its liveness every third of it (docs/api.md#presence)",
  }),
  PRESENCE_LAST_SEEN_SECONDS: variable(int(0, 2_592_000), 86_400, {
    roles: API,
    doc: "how long a side's `lastSeen` is kept after its last socket left (`0`: not kept once disconnected)",
  }),
};

export function realtimeSettings(v: ValuesOf<typeof REALTIME_VARIABLES>) {
  return {
    realtime: {
      socketsPerIp: v.SOCKETS_PER_IP,
      handshakes: {
        perMinute: v.SOCKET_HANDSHAKES_PER_MINUTE,
        connectTimeoutMs: v.SOCKET_CONNECT_TIMEOUT_MS,
      },
      backlog: { perSocket: v.SOCKET_BACKLOG_BYTES, perPod: v.SOCKET_BACKLOG_POD_BYTES },
      roomsMax: v.SOCKET_ROOMS_MAX,
      channelPartitions: v.SOCKET_CHANNEL_PARTITIONS,
      presence: { ttlSeconds: v.PRESENCE_TTL_SECONDS, lastSeenSeconds: v.PRESENCE_LAST_SEEN_SECONDS },
    },
  };
}

export type RealtimeConfig = ReturnType<typeof realtimeSettings>['realtime'];
