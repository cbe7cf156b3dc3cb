export { credentialProperties } from './credential-schema.js';
export { AuthGate } from './gate.js';
export { signedBody } from './route-guard.js';
export { nonceStatusRead, noncesRoutes } from './routes.js';
export { announceVerifier, chooseVerifier } from './signature.js';
export { AuthStore } from './store.js';
export { IDENTITY_VARIABLES as variables, identitySettings as settings } from './variables.js';
