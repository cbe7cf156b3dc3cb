import { ConfigError } from './errors.js';

/**
 * Turns a variable's trimmed, non-empty value into what the relay uses, or throws a ConfigError naming it.
 * `earlier` holds the values of the variables declared before it (for bounds that depend on another variable).
 */
export type Parser<T> = (value: string, name: string, earlier: Readonly<Record<string, unknown>>) => T;

export const string: Parser<string> = (value) => value;

/** An integer in [min, max]; a bound given as a variable's name is that variable's value. */
export function int(min: number | string, max: number): Parser<number> {
  return (value, name, earlier) => {
    const low = typeof min === 'number' ? min : (earlier[min] as number);
    if (!/^\d+$/.test(value) || Number(value) < low || Number(value) > max) {
      throw new ConfigError(`${name} must be an integer from ${low} to ${max} (got "${value}")`);
    }
    return Number(value);
  };
}

export function oneOf<const T extends string>(allowed: readonly T[]): Parser<T> {
  return (value, name) => {
    if (!(allowed as readonly string[]).includes(value)) {
      throw new ConfigError(`${name} must be one of ${allowed.join(', ')} (got "${value}")`);
    }
    return value as T;
  };
}

/** A URL of one of `protocols`, without trailing slashes. */
export function url(protocols = ['http:', 'https:']): Parser<string> {
  return (value, name) => {
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      throw new ConfigError(`${name} must be a URL (got an unparseable value)`);
    }
    if (!protocols.includes(parsed.protocol)) {
      throw new ConfigError(`${name} must be a ${protocols.join(' or ')} URL`);
    }
    return value.replace(/\/+$/, '');
  };
}

export interface HostPort {
  host: string;
  port: number;
}

/** `host:port,host:port,…` */
export const nodes: Parser<HostPort[]> = (value, name) =>
  value.split(',').map((entry) => {
    const match = /^\[?([^\s\]]+?)\]?:(\d{1,5})$/.exec(entry.trim());
    if (!match || Number(match[2]) < 1 || Number(match[2]) > 65535) {
      throw new ConfigError(
        `${name} must be a list of host:port separated by commas (got "${entry.trim()}")`,
      );
    }
    return { host: match[1]!, port: Number(match[2]) };
  });

/** Any JSON object. */
export const jsonObject: Parser<Record<string, unknown>> = (value, name) => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new ConfigError(`${name} must be a JSON object (it is not valid JSON)`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`${name} must be a JSON object`);
  }
  return parsed as Record<string, unknown>;
};

/** A JSON object of non-negative numbers keyed by names from `allowed`, merged over `fallback`. */
export function numberMap<K extends string>(
  fallback: Record<K, number>,
  allowed: readonly string[],
): Parser<Record<K, number>> {
  return (value, name, earlier) => {
    const merged: Record<string, number> = { ...fallback };
    for (const [key, entry] of Object.entries(jsonObject(value, name, earlier))) {
      if (!allowed.includes(key)) throw new ConfigError(`${name} has an unknown chain "${key}"`);
      if (typeof entry !== 'number' || !Number.isFinite(entry) || entry < 0) {
        throw new ConfigError(`${name}.${key} must be a non-negative number`);
      }
      merged[key] = entry;
    }
    return merged as Record<K, number>;
  };
}
