import type { Feature } from '../core/feature.js';
import { IDENTITY_VARIABLES, identitySettings } from './variables.js';
import { nonceStatus } from './routes.js';

export { credentialProperties } from './credential-schema.js';
export { AuthGate } from './gate.js';
export { signedBody } from './route-guard.js';
export { announceVerifier, chooseVerifier } from './signature.js';
export { AuthStore } from './store.js';

/** Identity signatures of writes and joins, and the nonce status the key app polls. */
export const identity = {
  config: { variables: IDENTITY_VARIABLES, settings: identitySettings },
  routes: [nonceStatus],
} satisfies Feature<unknown>;
