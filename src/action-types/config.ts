import { ConfigError } from '../core/config/errors.js';
import { AppError } from '../core/errors.js';
import { validator } from '../core/validation/validate.js';
import { BUILT_IN_ACTION_TYPES, type ExtraActionType } from './table.js';
import { actionTypesExtra } from './schema.js';

const parseActionTypesExtra = validator<ExtraActionType[]>('config', actionTypesExtra);

/** Events are named after action types, so no type may take the name of an event the sockets exchange. */
const SOCKET_EVENTS: readonly string[] = ['ack', 'delivered', 'presence', 'join', 'leave'];

/**
 * ACTION_TYPES_EXTRA: a JSON array of rows, each adding a type; a built-in type may not be changed, nor a socket
 * event's name taken.
 */
export function readActionTypesExtra(value: string | undefined): ExtraActionType[] {
  const name = 'ACTION_TYPES_EXTRA';
  if (value === undefined) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new ConfigError(`${name} must be a JSON array (it is not valid JSON)`);
  }
  let rows: ExtraActionType[];
  try {
    rows = parseActionTypesExtra(parsed);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    const first = err.details?.[0];
    const where = first ? `${first.field.replace(/^\/config/, '') || '/'} ${first.message}` : 'is invalid';
    throw new ConfigError(
      `${name} must be an array of { type, to: "key"|"wallet", replay, push: { title, body } | null }: ${where}`,
    );
  }
  const builtIn = rows.find((row) => Object.hasOwn(BUILT_IN_ACTION_TYPES, row.type));
  if (builtIn) throw new ConfigError(`${name} may not change the built-in type "${builtIn.type}"`);
  const reserved = rows.find((row) => SOCKET_EVENTS.includes(row.type));
  if (reserved) {
    throw new ConfigError(
      `${name} may not name a type "${reserved.type}": ${SOCKET_EVENTS.join(', ')} are the sockets' own events`,
    );
  }
  return rows;
}

/** AUTH_UNSIGNED_ACTIONS may name only action types, built in or among `extra`. */
export function checkUnsignedActions(types: readonly string[], extra: readonly ExtraActionType[]): void {
  const unknownType = types.find(
    (type) => !Object.hasOwn(BUILT_IN_ACTION_TYPES, type) && !extra.some((row) => row.type === type),
  );
  if (unknownType !== undefined) {
    throw new ConfigError(
      `AUTH_UNSIGNED_ACTIONS names "${unknownType}", which is not an action type (built in or in ACTION_TYPES_EXTRA); separate types by commas, or say none`,
    );
  }
}
