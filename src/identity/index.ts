export { credentialProperties } from './credential-schema.js';
export { AuthGate } from './gate.js';
export { signedBody, type StoredAnswer } from './route-guard.js';
export { noncesRoutes } from './routes.js';
export { AuthStore } from './store.js';
