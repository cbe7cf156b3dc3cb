/**
 * `not-modified` phase of `npm run bench`: the plain poll `GET /v1/action/{id}` of a 10 KB `tx` record, in
 * interleaved rounds — the relay answering 200 (no If-None-Match), the relay answering 304 (If-None-Match names
 * the record's ETag), and the bare server's read of the same record answered 304 without comparing anything —
 * and the relay's CPU per 304 above that bare read (goal ≤ 15 µs) and against its 200.
 */
import { round, type Child } from './children.js';
import { drive, median, medianSummary, type Measured, type Summary } from './load.js';
import { fmt, HEADER, verdict, type Bench, type Phase } from './phase.js';
import { ACTION_BODY, JSON_HEADERS, SYNC_RECORD } from './requests.js';
import { timeIt } from './verify.js';
import { namesCurrentTag } from '../src/core/http/conditional.js';
import { recordTag } from '../src/mailbox/store.js';

const READ = `/v1/action/${SYNC_RECORD.wkIdentity}`;
const GOAL_US = 15;

/** Stores the 10 KB request afresh and answers the record as stored and the ETag the relay gives it. */
async function seedAction(relay: Child): Promise<{ json: string; tag: string }> {
  const res = await fetch(`${relay.url}/v1/action`, {
    method: 'POST',
    headers: JSON_HEADERS,
    body: ACTION_BODY,
  });
  if (res.status !== 200)
    throw new Error(`seeding POST /v1/action answered ${res.status}: ${await res.text()}`);
  const json = JSON.stringify((JSON.parse(await res.text()) as { data: unknown }).data);
  const tag = (await fetch(relay.url + READ)).headers.get('etag');
  if (tag === null) throw new Error(`GET ${READ} answered no ETag`);
  return { json, tag };
}

/** In this process, µs per call: the 304's own work on the record, its tag and an exact and a listed weak match. */
function ownWork(json: string): { exact: number; weakList: number } {
  const tag = recordTag(json)!;
  const list = `"other", W/${tag}`;
  return {
    exact: timeIt(() => namesCurrentTag(tag, recordTag(json)!), 200_000),
    weakList: timeIt(() => namesCurrentTag(list, recordTag(json)!), 200_000),
  };
}

/** Polls `target`, with `tag` in If-None-Match if given; a failure is any answer but 200, or 304 with `tag`. */
async function poll(target: Child, seconds: number, connections: number, tag?: string): Promise<Measured> {
  const measured = await drive(target.process.pid!, {
    url: target.url + READ,
    connections,
    duration: seconds,
    ...(tag === undefined ? {} : { headers: { 'if-none-match': tag } }),
  });
  const counts = Object.values(measured.raw.statusCodeStats).map((stat) => stat.count);
  const expected = measured.raw.statusCodeStats[tag === undefined ? '200' : '304']?.count ?? 0;
  const unexpected = counts.reduce((sum, count) => sum + count, 0) - expected;
  return { ...measured, summary: { ...measured.summary, non2xx: unexpected } };
}

interface NotModifiedRound {
  round: number;
  relay200: Summary;
  relay304: Summary;
  bare304: Summary;
  /** The relay's CPU per 304 minus the bare server's per read, µs. */
  aboveReadUs: number;
  /** The relay's CPU per 304 over its CPU per 200. */
  cpuRatio: number;
}

async function notModifiedRounds(bench: Bench): Promise<NotModifiedRound[]> {
  const { relay, bare, raw, out, rounds, duration, connections, warmup } = bench;
  out(
    `GET /v1/action/{id} (10 KB record) 200 and 304, and the bare read: ${rounds} interleaved rounds of ` +
      `${duration} s, ${connections} connections`,
  );
  const { tag: warmTag } = await seedAction(relay);
  for (const [target, tag] of [
    [relay, undefined],
    [relay, warmTag],
    [bare, warmTag],
  ] as const)
    await poll(target, warmup, connections, tag);
  out(HEADER + ['µs > read', '304/200'].map((h) => h.padStart(10)).join(''));
  const results: NotModifiedRound[] = [];
  for (let i = 1; i <= rounds; i++) {
    const { tag } = await seedAction(relay);
    const ok = await poll(relay, duration, connections);
    const unchanged = await poll(relay, duration, connections, tag);
    const read = await poll(bare, duration, connections, tag);
    (raw.actionGetRelay ??= []).push(ok.raw);
    (raw.notModifiedRelay ??= []).push(unchanged.raw);
    (raw.notModifiedBare ??= []).push(read.raw);
    const row: NotModifiedRound = {
      round: i,
      relay200: ok.summary,
      relay304: unchanged.summary,
      bare304: read.summary,
      aboveReadUs: unchanged.summary.cpuUsPerRequest - read.summary.cpuUsPerRequest,
      cpuRatio: round(unchanged.summary.cpuUsPerRequest / ok.summary.cpuUsPerRequest, 2),
    };
    results.push(row);
    out(`${`round ${i} relay 200`.padEnd(22)} ${fmt(ok.summary)}`);
    out(`${`round ${i} relay 304`.padEnd(22)} ${fmt(unchanged.summary)}`);
    out(
      `${`round ${i} bare read`.padEnd(22)} ${fmt(read.summary)}` +
        [row.aboveReadUs, row.cpuRatio].map((v) => String(v).padStart(10)).join(''),
    );
  }
  return results;
}

async function notModifiedPhase(bench: Bench) {
  const rounds = await notModifiedRounds(bench);
  bench.out();
  return {
    ownWorkUs: ownWork((await seedAction(bench.relay)).json),
    rounds,
    medians: {
      relay200: medianSummary(rounds.map((r) => r.relay200)),
      relay304: medianSummary(rounds.map((r) => r.relay304)),
      bare304: medianSummary(rounds.map((r) => r.bare304)),
      aboveReadUs: median(rounds.map((r) => r.aboveReadUs)),
      cpuRatio: median(rounds.map((r) => r.cpuRatio)),
    },
  };
}

export const notModified: Phase<Awaited<ReturnType<typeof notModifiedPhase>>> = {
  name: 'not-modified',
  key: 'notModified',
  async run(bench) {
    if (bench.withAction) return notModifiedPhase(bench);
    bench.out('GET /v1/action/{id}: not in this build of the relay, skipped');
    return undefined;
  },
  medians: ({ medians: m, ownWorkUs }) => {
    return [
      `${'GET action 200 relay'.padEnd(22)} ${fmt(m.relay200)}`,
      `${'GET action 304 relay'.padEnd(22)} ${fmt(m.relay304)}`,
      `${'GET action bare read'.padEnd(22)} ${fmt(m.bare304)}`,
      `304 CPU above the bare read: median ${m.aboveReadUs} µs (target <= ${GOAL_US}: ${verdict(m.aboveReadUs <= GOAL_US)})`,
      `304/200 CPU per request:    median ${m.cpuRatio}`,
      `304's own work in process (tag, If-None-Match): ${ownWorkUs.exact} µs exact, ${ownWorkUs.weakList} µs in a list`,
    ];
  },
};
