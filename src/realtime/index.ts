export { Realtime } from './servers.js';
export { joinEvent, roomEvent } from './socket-schema.js';
export { REALTIME_VARIABLES as variables, realtimeSettings as settings } from './variables.js';
