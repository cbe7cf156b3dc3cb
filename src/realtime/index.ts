export { Realtime } from './servers.js';
export { roomEvent } from './socket-schema.js';
