/** A refused configuration: start-up prints its message on one line and exits with code 2. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
