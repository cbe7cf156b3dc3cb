import autocannon, { type Options, type Result } from 'autocannon';
import { cpuMsOf, round } from './children.js';

/** What the benchmark reports of one autocannon run. */
export interface Summary {
  /** Mean of the per-second request counts. */
  rps: number;
  p50: number;
  p99: number;
  total: number;
  non2xx: number;
  errors: number;
  /** CPU time (user + system) the server process spent per answered request, µs: robust to a busy machine. */
  cpuUsPerRequest: number;
}

export interface Measured {
  summary: Summary;
  raw: Result;
}

/** Runs autocannon against the server process `pid` and measures its CPU time meanwhile. */
export async function drive(pid: number, options: Options): Promise<Measured> {
  const cpuBefore = await cpuMsOf(pid);
  const raw = await autocannon(options);
  const cpuMs = (await cpuMsOf(pid)) - cpuBefore;
  return {
    raw,
    summary: {
      rps: Math.round(raw.requests.average),
      p50: raw.latency.p50,
      p99: raw.latency.p99,
      total: raw.requests.total,
      non2xx: raw.non2xx,
      errors: raw.errors,
      cpuUsPerRequest: raw.requests.total ? Math.round((1000 * cpuMs) / raw.requests.total) : 0,
    },
  };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const value = sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  return round(value, 2);
}

/** Medians of the measurements; failures (non-2xx, errors) are summed over the rounds, not hidden. */
export function medianSummary(summaries: Summary[]): Summary {
  const of = (field: keyof Summary) => median(summaries.map((s) => s[field]));
  const sum = (field: keyof Summary) => summaries.reduce((total, s) => total + s[field], 0);
  return {
    rps: of('rps'),
    p50: of('p50'),
    p99: of('p99'),
    total: of('total'),
    non2xx: sum('non2xx'),
    errors: sum('errors'),
    cpuUsPerRequest: of('cpuUsPerRequest'),
  };
}

/** The `p`th percentile of ascending `sorted` values (NaN when there are none). */
export function percentile(sorted: number[], p: number): number {
  return round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN, 2);
}

/**
 * Calls `send(n)` for n = 0 … total − 1, `rate` a second on a steady schedule (each at its own slot, whatever the
 * earlier ones take), and waits for all of them.
 */
export async function onSchedule(
  rate: number,
  total: number,
  send: (n: number) => Promise<void>,
): Promise<void> {
  const sends: Promise<void>[] = [];
  const started = performance.now();
  for (let n = 0; n < total; n++) {
    const wait = started + (n * 1000) / rate - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    sends.push(send(n));
  }
  await Promise.all(sends);
}
