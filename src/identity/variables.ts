import { ConfigError } from '../core/config/errors.js';
import { int, oneOf, string, type Parser } from '../core/config/parsers.js';
import { API, optional, variable, type ValuesOf } from '../core/config/variables.js';
import { AUTH_ROUTES, type AuthRoute } from '../core/signed-routes.js';

/** A key that signs or verifies session tokens: its id (the token header's `kid`) and its secret. */
export interface SessionKey {
  kid: string;
  secret: Uint8Array;
}

const KID = /^[A-Za-z0-9_-]{1,16}$/;
const BASE64 = /^(?:[A-Za-z0-9+/]+={0,2}|[A-Za-z0-9_-]+)$/;
const MIN_SECRET_BYTES = 32;

/** `<kid>:<secret>,…`; a refusal never quotes a secret. */
const sessionKeys: Parser<SessionKey[]> = (value, name) => {
  const keys = value.split(',').map((entry, i) => {
    const colon = entry.indexOf(':');
    const kid = entry.slice(0, colon).trim();
    const secret = entry.slice(colon + 1).trim();
    if (colon < 0 || !KID.test(kid)) {
      throw new ConfigError(`${name} entry ${i + 1}: a key id is 1 to 16 of A-Z a-z 0-9 _ - before a colon`);
    }
    // Node's base64 decoder reads the base64url alphabet too.
    const bytes = BASE64.test(secret) ? Buffer.from(secret, 'base64') : undefined;
    if (bytes === undefined || bytes.length < MIN_SECRET_BYTES) {
      throw new ConfigError(
        `${name} key "${kid}": its secret must be base64 or base64url of at least ${MIN_SECRET_BYTES} bytes`,
      );
    }
    return { kid, secret: new Uint8Array(bytes) };
  });
  const twice = keys.find((key, i) => keys.findIndex((other) => other.kid === key.kid) !== i);
  if (twice !== undefined) throw new ConfigError(`${name} names the key id "${twice.kid}" twice`);
  return keys;
};

const AUDIENCE = /^[A-Za-z0-9_.:-]{1,100}$/;
const audience: Parser<string> = (value, name) => {
  if (!AUDIENCE.test(value)) {
    throw new ConfigError(`${name} must be 1 to 100 of A-Z a-z 0-9 _ . : - (got "${value}")`);
  }
  return value;
};

/** The identity's variables: which requests must be signed, pins, and the signature verifier. */
export const IDENTITY_VARIABLES = {
  AUTH_MODE: variable(oneOf(['off', 'optional', 'required']), 'optional', {
    roles: API,
    doc: 'identity-signed requests: `off`, `optional` (checked when present) or `required` ([docs/api.md](docs/api.md#identity-signed-requests))',
  }),
  AUTH_ROUTES: optional(string, {
    roles: API,
    doc: 'per-route modes over `AUTH_MODE`, e.g. `action=required,token=required,join=optional,sync=off`; `ack` is `required` whatever `AUTH_MODE` says, or `off`',
  }),
  AUTH_WINDOW_SECONDS: variable(int(1, 86_400), 600, {
    roles: API,
    doc: "how far a signed message's timestamp may be from the relay's clock",
  }),
  AUTH_PIN_DAYS: variable(int(0, 3650), 0, {
    roles: API,
    doc: 'pins: a side that signed must sign its writes (and joins, if `true`) for that many days; 0: off',
  }),
  AUTH_PIN_JOINS: variable(oneOf(['true', 'false']), 'false', { roles: API }),
  AUTH_UNSIGNED_ACTIONS: variable(string, 'recoveryrequest', {
    roles: API,
    doc: 'action types accepted unsigned whatever the mode or pin (`none` for no exemption); each must be in the action-type table',
  }),
  SIGNATURE_VERIFIER: variable(oneOf(['auto', 'libsecp256k1', 'node:crypto']), 'auto', {
    roles: API,
    doc: '`auto`: libsecp256k1 where its native binding loads, else `node:crypto`; or either forced (docs/operations.md#signature-verification)',
  }),
  AUTH_READS: variable(oneOf(['open', 'required']), 'open', {
    roles: API,
    doc: "`required`: a pair's reads and socket joins need a session token ([docs/api.md](docs/api.md#sessions)); `open`: answered as without sessions",
  }),
  SESSION_KEYS: optional(sessionKeys, {
    roles: API,
    shown: '—',
    doc: 'session token keys, `<kid>:<secret>,…` (secret: base64 of at least 32 bytes); the first signs, every one verifies; unset: sessions off',
  }),
  SESSION_AUDIENCE: variable(audience, 'multisig-relay', {
    roles: API,
    doc: 'the `aud` of the tokens this relay issues and accepts: give staging and production different ones',
  }),
  SESSION_TTL_SECONDS: variable(int(60, 86_400), 3600, { roles: API, doc: 'session token lifetime' }),
  SESSION_CLOCK_SKEW_SECONDS: variable(int(0, 300), 30, {
    roles: API,
    doc: "leeway on a token's issue and expiry times between the relay's pods",
  }),
  SESSION_CHALLENGE_SECONDS: variable(int(10, 600), 120, {
    roles: API,
    doc: 'how long a session challenge can be exchanged',
  }),
};

type IdentityValues = ValuesOf<typeof IDENTITY_VARIABLES>;
export type AuthMode = IdentityValues['AUTH_MODE'];
const AUTH_MODES: readonly AuthMode[] = ['off', 'optional', 'required'];

/**
 * AUTH_MODE for every route but `ack`, which no released app sends and which is `required` unless AUTH_ROUTES turns
 * it off; then AUTH_ROUTES' `route=mode` pairs over it.
 */
function authModes(v: IdentityValues): Record<AuthRoute, AuthMode> {
  const modes = Object.fromEntries(
    AUTH_ROUTES.map((route) => [route, route === 'ack' ? 'required' : v.AUTH_MODE]),
  ) as Record<AuthRoute, AuthMode>;
  for (const entry of (v.AUTH_ROUTES ?? '').split(',').filter((e) => e.trim())) {
    const [route, value, extra] = entry.split('=').map((part) => part.trim());
    if (!AUTH_ROUTES.includes(route as AuthRoute) || !AUTH_MODES.includes(value as AuthMode) || extra) {
      throw new ConfigError(
        `AUTH_ROUTES must be route=mode pairs separated by commas, routes ${AUTH_ROUTES.join(', ')}, modes ${AUTH_MODES.join(', ')} (got "${entry.trim()}")`,
      );
    }
    modes[route as AuthRoute] = value as AuthMode;
  }
  if (modes.ack === 'optional') {
    throw new ConfigError(
      'AUTH_ROUTES makes acks optional, but an unchecked ack would let a stranger silence a push: set ack=required or ack=off',
    );
  }
  if (modes.sync === 'required') {
    throw new ConfigError(
      'AUTH_ROUTES/AUTH_MODE make POST /v1/sync required, but no key app signs its sync: set sync=optional or sync=off in AUTH_ROUTES',
    );
  }
  return modes;
}

/** A comma-separated list; `none` is the empty list (the composition checks each is an action type). */
function unsignedActions(value: string): string[] {
  return value === 'none'
    ? []
    : value
        .split(',')
        .map((type) => type.trim())
        .filter(Boolean);
}

export function identitySettings(v: IdentityValues) {
  if (v.AUTH_READS === 'required' && v.SESSION_KEYS === undefined) {
    throw new ConfigError(
      'AUTH_READS=required needs SESSION_KEYS: no client could get the token reads require',
    );
  }
  return {
    session: {
      reads: v.AUTH_READS,
      /** Empty: sessions are off. */
      keys: v.SESSION_KEYS ?? [],
      audience: v.SESSION_AUDIENCE,
      ttlSeconds: v.SESSION_TTL_SECONDS,
      skewSeconds: v.SESSION_CLOCK_SKEW_SECONDS,
      challengeSeconds: v.SESSION_CHALLENGE_SECONDS,
    },
    auth: {
      modes: authModes(v),
      windowSeconds: v.AUTH_WINDOW_SECONDS,
      /** 0: no pins are set or enforced. */
      pinDays: v.AUTH_PIN_DAYS,
      pinJoins: v.AUTH_PIN_JOINS === 'true',
      unsignedActions: unsignedActions(v.AUTH_UNSIGNED_ACTIONS),
      signatureVerifier: v.SIGNATURE_VERIFIER,
    },
  };
}

export type AuthConfig = ReturnType<typeof identitySettings>['auth'];
export type SessionConfig = ReturnType<typeof identitySettings>['session'];
