import { Counter, Gauge } from 'prom-client';
import { registry } from '../core/metrics.js';

const socketsConnected = new Gauge({
  name: 'relay_sockets_connected',
  help: 'socket.io connections open on this pod, by path (key, wallet).',
  labelNames: ['path'] as const,
  registers: [registry],
});

const socketsRefused = new Counter({
  name: 'relay_socket_connections_refused_total',
  help: 'socket.io handshakes refused (the client IP holds SOCKETS_PER_IP sockets on this pod, or spent SOCKET_HANDSHAKES_PER_MINUTE), by path.',
  labelNames: ['path'] as const,
  registers: [registry],
});

const socketConnectsRefused = new Counter({
  name: 'relay_socket_connects_refused_total',
  help: 'socket.io connections closed for a second CONNECT packet (one socket per connection), by path.',
  labelNames: ['path'] as const,
  registers: [registry],
});

const socketJoins = new Counter({
  name: 'relay_socket_joins_total',
  help: 'socket.io `join` events by path and outcome (joined; invalid, rate_limited, unauthorized and too_many_rooms disconnect the socket; unavailable: Redis could not say, the transport is closed and the client joins again).',
  labelNames: ['path', 'outcome'] as const,
  registers: [registry],
});

const socketEvents = new Counter({
  name: 'relay_socket_events_total',
  help: "Action events this pod sent, one per socket, by action type (live: as stored; replay: on a join or after a gap in the room channels' subscription); a record a socket already had is not counted.",
  labelNames: ['type', 'delivery'] as const,
  registers: [registry],
});

const socketsBehind = new Counter({
  name: 'relay_socket_slow_readers_total',
  help: 'Sockets disconnected because they did not read what was sent to them (past SOCKET_BACKLOG_BYTES, or the largest backlogs once the pod holds SOCKET_BACKLOG_POD_BYTES), by path.',
  labelNames: ['path'] as const,
  registers: [registry],
});

const socketAdapterErrors = new Counter({
  name: 'relay_socket_adapter_errors_total',
  help: "Stored action records this pod could not publish on their room's channel to the other pods, by path.",
  labelNames: ['path'] as const,
  registers: [registry],
});

const socketNotices = new Counter({
  name: 'relay_socket_notices_received_total',
  help: "Stored action records this pod received from Redis (its own and other pods' notices, on the channels of the rooms it holds), by path.",
  labelNames: ['path'],
  registers: [registry],
});

const socketNoticeBytes = new Counter({
  name: 'relay_socket_notice_bytes_received_total',
  help: 'Bytes of the notices counted by relay_socket_notices_received_total, by path.',
  labelNames: ['path'],
  registers: [registry],
});

const streamReplayed = new Counter({
  name: 'relay_stream_replayed_total',
  help: 'Records sent to stream sockets from the stream (a join with since, or the fill of a gap in live records), by path.',
  labelNames: ['path'] as const,
  registers: [registry],
});

const streamGapCloses = new Counter({
  name: 'relay_stream_gap_closes_total',
  help: 'Stream sockets whose transport was closed because a record they missed was no longer retained, or the position they were sent was lost in Redis, by path.',
  labelNames: ['path'] as const,
  registers: [registry],
});

const receiptsEmitted = new Counter({
  name: 'relay_receipts_emitted_total',
  help: '`delivered` events (a first ack of a record) this pod sent, one per stream socket of the sender side.',
  registers: [registry],
});

const presenceChanges = new Counter({
  name: 'relay_presence_changes_total',
  help: 'A side of a pair going connected (its first socket joined, on any pod) or not connected (its last socket left, or the pod holding it was found dead), by side; counted once, by the pod that saw it.',
  labelNames: ['side', 'connected'] as const,
  registers: [registry],
});

export const socketMetrics = {
  receiptsEmitted: (sockets: number) => receiptsEmitted.inc(sockets),
  connected: (path: string, change: 1 | -1) => socketsConnected.inc({ path }, change),
  refused: (path: string) => socketsRefused.inc({ path }),
  connectRefused: (path: string) => socketConnectsRefused.inc({ path }),
  joined: (
    path: string,
    outcome: 'joined' | 'invalid' | 'rate_limited' | 'unauthorized' | 'too_many_rooms' | 'unavailable',
  ) => socketJoins.inc({ path, outcome }),
  slowReader: (path: string) => socketsBehind.inc({ path }),
  emitted: (type: string, delivery: 'live' | 'replay') => socketEvents.inc({ type, delivery }),
  publishFailed: (path: string) => socketAdapterErrors.inc({ path }),
  streamReplayed: (path: string, records: number) => streamReplayed.inc({ path }, records),
  streamGapClosed: (path: string) => streamGapCloses.inc({ path }),
  presenceChanged: (side: string, connected: boolean) =>
    presenceChanges.inc({ side, connected: String(connected) }),
  noticeReceived: (path: string, bytes: number) => {
    socketNotices.inc({ path });
    socketNoticeBytes.inc({ path }, bytes);
  },
};
