export { Realtime } from './servers.js';
export { roomEvent } from './socket-schema.js';
export { REALTIME_VARIABLES as variables, realtimeSettings as settings } from './variables.js';
