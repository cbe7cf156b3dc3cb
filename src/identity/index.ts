import type { Feature } from '../core/feature.js';
import { IDENTITY_VARIABLES, identitySettings } from './variables.js';
import { nonceStatus } from './routes.js';
import { sessionRoutes, type SessionDeps } from './session/routes.js';

export { credentialProperties } from './credential-schema.js';
export { AuthGate } from './gate.js';
export { signedBody } from './route-guard.js';
export { announceVerifier, chooseVerifier } from './signature.js';
export { AuthStore } from './store.js';
export { openSessions } from './session/open.js';
export { bindingRefusal, sessionRead, type SessionCheck } from './session/check.js';
export { SessionStore } from './session/store.js';
export { session, sessionChallenge, sessionRevoked, type Sessions } from './session/routes.js';

/** Identity signatures of writes and joins, sessions, and the nonce status the key app polls. */
export const identity = {
  config: { variables: IDENTITY_VARIABLES, settings: identitySettings },
  routes: [nonceStatus, ...sessionRoutes],
} satisfies Feature<SessionDeps>;
