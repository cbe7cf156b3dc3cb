import type { SignatureVerifier } from '../signature.js';
import { AuthGate } from '../gate.js';
import type { AuthStore } from '../store.js';
import type { AuthConfig, SessionConfig } from '../variables.js';
import { SessionCheck } from './check.js';
import type { Sessions } from './routes.js';
import type { SessionStore } from './store.js';
import { SessionTokens } from './tokens.js';

/** The API role's identity parts: sessions, and the gate of signed writes and joins that accepts their tokens. */
export function openSessions(
  config: { auth: AuthConfig; session: SessionConfig },
  stores: { auth: AuthStore; sessions: SessionStore },
  verifier: SignatureVerifier,
): { authGate: AuthGate; sessions: Sessions } {
  const tokens = new SessionTokens(config.session);
  const check = new SessionCheck(tokens, stores.sessions, config.session.reads);
  const authGate = new AuthGate(config.auth, stores.auth, verifier, Date.now, check);
  return { authGate, sessions: { tokens, check, verifier } };
}
