import type { Side } from '../core/sides.js';
import { longPollMetrics } from './metrics.js';

/** A watch of one pair's direction (see StoredSignals.watch). */
export interface Watch {
  /** Settles once every record stored from then on, on any pod, calls `wake`; rejects when it cannot. */
  listening: Promise<unknown>;
  /** Ends the watch: `wake` is not called any more. */
  release(): void;
}

/**
 * What the long-poll needs of the pods' room channels (the realtime feature gives it): a call whenever a record
 * of a pair's direction is stored on any pod, through the pod's shared subscription of the pair's channel.
 */
export interface StoredSignals {
  watch(side: Side, wkIdentity: string, wake: () => void): Watch;
}

/** Why a held read ended: a record was signalled, its time ran out, or the pod is draining. */
export type Ending = 'stored' | 'timeout' | 'drained';

/** A held read: a timer, a watch and a settle function (well under 2 KB of heap each). */
interface Held {
  ip: string;
  watch: Watch;
  timer: NodeJS.Timeout;
  settle: (ending: Ending) => void;
}

/**
 * The stream reads an API pod holds (docs/api.md#stream-read-and-long-poll): at most `perIp` per client address,
 * each waiting for a record of its pair's direction on any pod, for its time, or for the drain of SIGTERM. A
 * held read costs no Redis command while it waits: pods share one subscription per pair (StoredSignals).
 */
export class LongPolls {
  private readonly held = new Set<Held>();
  private readonly perAddress = new Map<string, number>();
  private draining = false;

  constructor(
    private readonly signals: StoredSignals,
    private readonly perIp: number,
  ) {}

  /** Why a read of `ip` may not be held now (the pod drains, or the address holds its bound), if it may not. */
  refusal(ip: string): 'drained' | 'over_limit' | undefined {
    if (this.draining) return 'drained';
    return (this.perAddress.get(ip) ?? 0) < this.perIp ? undefined : 'over_limit';
  }

  /**
   * Holds a read of `ip` on `side` of `wkIdentity` for `waitMs` at most. `check` reads the stream again once the
   * watch listens (a record stored before it is in that read) and after each wake; it answers whether the read
   * is done. Resolves with what ended the hold: `check` said done ('stored'), the time ran out (or the client
   * went away: `gone` is given the function to call then), or a drain.
   */
  async hold(
    ip: string,
    side: Side,
    wkIdentity: string,
    waitMs: number,
    gone: (end: () => void) => void,
    check: () => Promise<boolean>,
  ): Promise<Ending> {
    let wakes = 0;
    let settle!: (ending: Ending) => void;
    const ended = new Promise<Ending>((resolve) => (settle = resolve));
    const entry: Held = {
      ip,
      watch: this.signals.watch(side, wkIdentity, () => void wake()),
      timer: setTimeout(() => settle('timeout'), waitMs),
      settle,
    };
    // A wake while a check runs is checked again after it: a record is never missed between two reads.
    let checking: Promise<void> | undefined;
    const wake = async () => {
      wakes += 1;
      if (checking) return;
      while (wakes > 0) {
        wakes = 0;
        checking = check().then((done) => (done ? settle('stored') : undefined));
        await checking.catch(() => settle('timeout'));
      }
      checking = undefined;
    };
    this.enter(entry);
    gone(() => settle('timeout'));
    try {
      await entry.watch.listening;
      void wake();
    } catch {
      settle('timeout');
    }
    const ending = await ended;
    this.leave(entry);
    // A check in flight finishes before the answer is taken from the read it updates.
    await checking?.catch(() => undefined);
    return ending;
  }

  /** SIGTERM: every held read ends now, and none is held from now on. */
  drain(): void {
    this.draining = true;
    for (const entry of this.held) entry.settle('drained');
  }

  private enter(entry: Held): void {
    this.held.add(entry);
    this.perAddress.set(entry.ip, (this.perAddress.get(entry.ip) ?? 0) + 1);
    longPollMetrics.waiting(1);
  }

  private leave(entry: Held): void {
    if (!this.held.delete(entry)) return;
    clearTimeout(entry.timer);
    entry.watch.release();
    const count = (this.perAddress.get(entry.ip) ?? 1) - 1;
    if (count > 0) this.perAddress.set(entry.ip, count);
    else this.perAddress.delete(entry.ip);
    longPollMetrics.waiting(-1);
  }
}
