import { format } from 'node:util';
import { ConditionLog } from './condition-log.js';
import type { LogLevel } from './config.js';

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type LogFields = Record<string, unknown>;

/**
 * Structured JSON lines on stdout. Callers pass identifiers and measurements only: never bodies, payloads,
 * xpubs, push tokens, emails or secrets.
 */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

/** A class rather than closures: the API makes a child per request, so it must be cheap to create. */
class JsonLogger implements Logger {
  constructor(
    private readonly min: number,
    private readonly base: LogFields,
    private readonly write: (line: string) => void,
    /** A child's own fields, kept apart from `base` so that forking one costs no copy. */
    private readonly own?: LogFields,
  ) {}

  private emit(level: LogLevel, msg: string, fields?: LogFields): void {
    if (ORDER[level] < this.min) return;
    const line = { time: new Date().toISOString(), level, msg, ...this.base, ...this.own, ...fields };
    this.write(JSON.stringify(line));
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
    return new JsonLogger(this.min, base, this.write, fields);
  }
}

export function createLogger(level: LogLevel, base: LogFields = {}, write = defaultWrite): Logger {
  return new JsonLogger(ORDER[level], base, write);
}

function defaultWrite(line: string): void {
  process.stdout.write(line + '\n');
}

/** An error's name and message for a log line, without a stack for expected failures. */
export function errorFields(err: unknown): LogFields {
  if (err instanceof Error) return { err: err.message, errName: err.name };
  return { err: String(err) };
}

/**
 * Libraries that print to the console (BullMQ's plain-text "IMPORTANT! Eviction policy…" from each of its
 * connections) would break the one-JSON-object-per-line output: their lines become warnings of `log`, each
 * distinct text once, then summarized like any other recurring condition.
 */
export function captureConsole(log: Logger, summaryMs: number): void {
  const repeats = new ConditionLog(log, summaryMs);
  const write = (...args: unknown[]) => {
    const text = format(...args);
    if (repeats.occurred(text, 'library output repeated', { text })) log.warn('library output', { text });
  };
  // eslint-disable-next-line no-console -- replacing the console is the point
  console.log = console.info = console.warn = console.error = console.debug = write;
}
