import { format } from 'node:util';
import { ConditionLog } from './condition-log.js';
import type { Logger } from './log.js';

/** How many distinct library lines captureConsole follows at once (a line with a changing part is many). */
export const LIBRARY_LINES_FOLLOWED = 100;

/**
 * Libraries that print to the console (BullMQ's plain-text "IMPORTANT! Eviction policy…" from each of its
 * connections) would break the one-JSON-object-per-line output: their lines become warnings of `log`, each
 * distinct text once, then summarized like any other recurring condition (the last LIBRARY_LINES_FOLLOWED).
 */
export function captureConsole(log: Logger, summaryMs: number): void {
  const repeats = new ConditionLog(log, summaryMs, LIBRARY_LINES_FOLLOWED);
  const write = (...args: unknown[]) => {
    const text = format(...args);
    if (repeats.occurred(text, 'library output repeated', { text })) log.warn('library output', { text });
  };
  // eslint-disable-next-line no-console -- replacing the console is the point
  console.log = console.info = console.warn = console.error = console.debug = write;
}
