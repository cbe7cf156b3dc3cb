import { ConfigError } from '../core/config/errors.js';
import { int, oneOf, string } from '../core/config/parsers.js';
import { API, optional, variable, type ValuesOf } from '../core/config/variables.js';
import { AUTH_ROUTES, type AuthRoute } from '../core/signed-routes.js';

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
  return {
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
