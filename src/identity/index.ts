export { credentialProperties } from './credential-schema.js';
export { AuthGate, PURPOSE, type SignedRoute } from './gate.js';
export { signedBody, type StoredAnswer } from './route-guard.js';
export { nonceStatusRead, noncesRoutes } from './routes.js';
export { AuthStore } from './store.js';
