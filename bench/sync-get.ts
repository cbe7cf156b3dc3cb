/**
 * `sync-get` phase of `npm run bench`: GET /v1/sync/{id} on the relay and on the bare server, in interleaved
 * rounds, and the relay's throughput, p99 and CPU per request as ratios to the bare server's.
 */
import { round } from './children.js';
import { median, medianSummary, type Summary } from './load.js';
import { fmt, HEADER, verdict, type Bench, type Phase } from './phase.js';
import { getSync, seedSync } from './requests.js';

interface GetRound {
  round: number;
  relay: Summary;
  bare: Summary;
  rpsRatio: number;
  p99Ratio: number;
  cpuRatio: number;
}

async function getRounds(bench: Bench): Promise<GetRound[]> {
  const { relay, bare, raw, out, rounds, duration, connections, warmup } = bench;
  out(`GET /v1/sync/{id}: ${rounds} interleaved rounds of ${duration} s, ${connections} connections`);
  for (const target of [relay, bare]) {
    await seedSync(relay);
    await getSync(target, warmup, connections);
  }
  out(HEADER + ['rps ratio', 'p99 ratio', 'cpu ratio'].map((h) => h.padStart(10)).join(''));
  const results: GetRound[] = [];
  for (let i = 1; i <= rounds; i++) {
    await seedSync(relay);
    const r = await getSync(relay, duration, connections);
    await seedSync(relay);
    const b = await getSync(bare, duration, connections);
    (raw.getRelay ??= []).push(r.raw);
    (raw.getBare ??= []).push(b.raw);
    const row: GetRound = {
      round: i,
      relay: r.summary,
      bare: b.summary,
      rpsRatio: round(r.summary.rps / b.summary.rps, 2),
      p99Ratio: round(r.summary.p99 / b.summary.p99, 2),
      cpuRatio: round(r.summary.cpuUsPerRequest / b.summary.cpuUsPerRequest, 2),
    };
    results.push(row);
    out(`${`round ${i} relay`.padEnd(22)} ${fmt(r.summary)}`);
    out(
      `${`round ${i} bare`.padEnd(22)} ${fmt(b.summary)}${[row.rpsRatio, row.p99Ratio, row.cpuRatio].map((v) => String(v).padStart(10)).join('')}`,
    );
  }
  return results;
}

async function getPhase(bench: Bench) {
  const rounds = await getRounds(bench);
  bench.out();
  return {
    rounds,
    medians: {
      relay: medianSummary(rounds.map((r) => r.relay)),
      bare: medianSummary(rounds.map((r) => r.bare)),
      rpsRatio: median(rounds.map((r) => r.rpsRatio)),
      p99Ratio: median(rounds.map((r) => r.p99Ratio)),
      cpuRatio: median(rounds.map((r) => r.cpuRatio)),
    },
  };
}

export const syncGet: Phase<Awaited<ReturnType<typeof getPhase>>> = {
  name: 'sync-get',
  key: 'get',
  run: getPhase,
  medians: ({ medians: m }) => [
    `${'GET relay'.padEnd(22)} ${fmt(m.relay)}`,
    `${'GET bare'.padEnd(22)} ${fmt(m.bare)}`,
    `GET throughput relay/bare: median ${m.rpsRatio} (target >= 0.6: ${verdict(m.rpsRatio >= 0.6)})`,
    `GET p99 relay/bare:        median ${m.p99Ratio} (target <= 2: ${verdict(m.p99Ratio <= 2)})`,
    `GET CPU per request relay/bare: median ${m.cpuRatio}`,
  ],
};
