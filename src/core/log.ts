import type { LogFormat, LogLevel } from './config/config.js';

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type LogFields = Record<string, unknown>;

/**
 * Structured lines on stdout: JSON, or with LOG_FORMAT=pretty one readable line each. Callers pass identifiers and measurements only: never bodies, payloads,
 * xpubs, push tokens, emails or secrets.
 */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

type Entry = { time: string; level: LogLevel; msg: string } & LogFields;

/** `12:00:00.000 INFO  message key=value …`: values as JSON, so a string with spaces stays one token. */
function pretty({ time, level, msg, ...fields }: Entry): string {
  const pairs = Object.entries(fields).map(([key, value]) => `${key}=${JSON.stringify(value)}`);
  return [time.slice(11, 23), level.toUpperCase().padEnd(5), msg, ...pairs].join(' ');
}

const RENDER: Record<LogFormat, (entry: Entry) => string> = { json: JSON.stringify, pretty };

/** A class rather than closures: the API makes a child per request, so it must be cheap to create. */
class LineLogger implements Logger {
  constructor(
    private readonly min: number,
    private readonly render: (entry: Entry) => string,
    private readonly base: LogFields,
    private readonly write: (line: string) => void,
    /** A child's own fields, kept apart from `base` so that forking one costs no copy. */
    private readonly own?: LogFields,
  ) {}

  private emit(level: LogLevel, msg: string, fields?: LogFields): void {
    if (ORDER[level] < this.min) return;
    const line = { time: new Date().toISOString(), level, msg, ...this.base, ...this.own, ...fields };
    this.write(this.render(line));
  }

  debug(msg: string, fields?: LogFields): void {
    this.emit('debug', msg, fields);
  }
  info(msg: string, fields?: LogFields): void {
    this.emit('info', msg, fields);
  }
  warn(msg: string, fields?: LogFields): void {
    this.emit('warn', msg, fields);
  }
  error(msg: string, fields?: LogFields): void {
    this.emit('error', msg, fields);
  }
  child(fields: LogFields): Logger {
    const base = this.own ? { ...this.base, ...this.own } : this.base;
    return new LineLogger(this.min, this.render, base, this.write, fields);
  }
}

export function createLogger(
  level: LogLevel,
  base: LogFields = {},
  write = defaultWrite,
  format: LogFormat = 'json',
): Logger {
  return new LineLogger(ORDER[level], RENDER[format], base, write);
}

function defaultWrite(line: string): void {
  process.stdout.write(line + '\n');
}

/** An error's name and message for a log line, without a stack for expected failures. */
export function errorFields(err: unknown): LogFields {
  if (err instanceof Error) return { err: err.message, errName: err.name };
  return { err: String(err) };
}
