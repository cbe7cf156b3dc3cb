import type { LogFields, Logger } from './log.js';

interface Ongoing {
  since: number;
  occurrences: number;
  lastLogged: number;
}

/**
 * Conditions that recur while they last (a provider failing at every refresh, Redis refusing every reconnect):
 * one line when a condition starts, one when it ends, and while it lasts one summary per `summaryMs` with how
 * often it recurred, instead of a line per occurrence. At most `capacity` conditions are followed at once: a
 * new one past that forgets the oldest, which starts again (with its first line) should it recur.
 */
export class ConditionLog {
  private readonly ongoing = new Map<string, Ongoing>();

  constructor(
    private readonly log: Logger,
    private readonly summaryMs: number,
    private readonly capacity = Number.POSITIVE_INFINITY,
  ) {}

  /**
   * Condition `key` occurred (again). True when this occurrence starts it: the caller writes the first line
   * (it may have to look something up for it). Later occurrences write `summary`, with the count and duration,
   * once per period.
   */
  occurred(key: string, summary: string, fields: LogFields = {}): boolean {
    const now = Date.now();
    const state = this.ongoing.get(key);
    if (!state) {
      // A Map iterates in insertion order: its first key is the oldest condition.
      if (this.ongoing.size >= this.capacity) this.ongoing.delete(this.ongoing.keys().next().value!);
      this.ongoing.set(key, { since: now, occurrences: 1, lastLogged: now });
      return true;
    }
    state.occurrences += 1;
    if (now - state.lastLogged >= this.summaryMs) {
      state.lastLogged = now;
      this.log.warn(summary, { ...fields, occurrences: state.occurrences, sinceMs: now - state.since });
    }
    return false;
  }

  /** Condition `key` is over: one line saying so, if it was ongoing. */
  ended(key: string, msg: string, fields: LogFields = {}): void {
    const state = this.ongoing.get(key);
    if (!state) return;
    this.ongoing.delete(key);
    this.log.info(msg, { ...fields, occurrences: state.occurrences, durationMs: Date.now() - state.since });
  }
}
