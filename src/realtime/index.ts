import type { Feature } from '../core/feature.js';
import { realtimeRoutes, type PresenceDeps } from './routes.js';
import { REALTIME_VARIABLES, realtimeSettings } from './variables.js';

export { ackCapable } from './ackable.js';
export type { PresenceReads } from './presence.js';
export { Realtime } from './servers.js';
export { joinEvent, roomEvent } from './socket-schema.js';

/**
 * Socket.io events to the apps: its variables and the presence route here; its servers are started beside the HTTP
 * server (src/api.ts).
 */
export const realtime = {
  config: { variables: REALTIME_VARIABLES, settings: realtimeSettings },
  routes: realtimeRoutes,
} satisfies Feature<PresenceDeps>;
