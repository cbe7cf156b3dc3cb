/**
 * `push`, `routed` and `routed-push` phases of `npm run bench`: POST /v1/action with two bodies on the same relay,
 * one carrying a cost (the push intent, the event, both) and one without it, and the ratio between the two.
 */
import { round, type Child } from './children.js';
import { median, type Measured, type Summary } from './load.js';
import { fmt, HEADER, type Bench, type Phase } from './phase.js';
import { ACTION_BODY, JSON_HEADERS, postAction, UNROUTED_BODY } from './requests.js';

/** One round of two POST /v1/action bodies on the same relay: `with` the cost measured, `without` it. */
interface PairedRound {
  round: number;
  with: Summary;
  without: Summary;
  rpsRatio: number;
  cpuRatio: number;
}

interface PairedResult {
  rounds: PairedRound[];
  rpsRatio: number;
  cpuRatio: number;
}

interface Paired {
  title: string;
  /** Raw-result keys and row labels of the two bodies. */
  names: { with: string; without: string };
  bodies: { with: string; without: string };
}

/**
 * Two bodies alternately, alternating which goes first so drift cancels out: the ratio is the share of what
 * the first body costs beyond the second.
 */
async function pairedRounds(bench: Bench, paired: Paired): Promise<PairedResult> {
  const { relay, raw, out, rounds, duration, connections, warmup } = bench;
  out(`${paired.title}: ${rounds} interleaved rounds of ${duration} s`);
  await postAction(relay, warmup, connections, paired.bodies.with);
  await postAction(relay, warmup, connections, paired.bodies.without);
  out(HEADER + ['rps ratio', 'cpu ratio'].map((h) => h.padStart(10)).join(''));
  const results: PairedRound[] = [];
  for (let i = 1; i <= rounds; i++) {
    const run = (body: string) => postAction(relay, duration, connections, body);
    let measured: Measured;
    let baseline: Measured;
    if (i % 2) {
      measured = await run(paired.bodies.with);
      baseline = await run(paired.bodies.without);
    } else {
      baseline = await run(paired.bodies.without);
      measured = await run(paired.bodies.with);
    }
    (raw[paired.names.with] ??= []).push(measured.raw);
    (raw[paired.names.without] ??= []).push(baseline.raw);
    const row: PairedRound = {
      round: i,
      with: measured.summary,
      without: baseline.summary,
      rpsRatio: round(measured.summary.rps / baseline.summary.rps, 2),
      cpuRatio: round(measured.summary.cpuUsPerRequest / baseline.summary.cpuUsPerRequest, 2),
    };
    results.push(row);
    out(`${`round ${i} ${paired.names.without}`.padEnd(22)} ${fmt(row.without)}`);
    out(
      `${`round ${i} ${paired.names.with}`.padEnd(22)} ${fmt(row.with)}${[row.rpsRatio, row.cpuRatio].map((v) => String(v).padStart(10)).join('')}`,
    );
  }
  return {
    rounds: results,
    rpsRatio: median(results.map((r) => r.rpsRatio)),
    cpuRatio: median(results.map((r) => r.cpuRatio)),
  };
}

/**
 * The push's share of POST /v1/action: a routed type (`tx`: stored, its event emitted, its push intent appended)
 * against an unrouted one (stored only). The benchmark runs no worker: intents wait in their stream (trimmed to an
 * action's lifetime), as jobs did when the API queued them.
 */
const PUSH_PAIR: Paired = {
  title: 'POST /v1/action with and without the event and push intent',
  names: { with: 'postPush', without: 'postNoPush' },
  bodies: { with: ACTION_BODY, without: UNROUTED_BODY },
};

/** The pair of the routed-push phase, whose key side has a token registered (see registerKeyToken). */
const TOKEN_PAIR_ID = 'bc1q' + 't'.repeat(58);

async function registerKeyToken(relay: Child): Promise<void> {
  const res = await fetch(`${relay.url}/v1/token`, {
    method: 'POST',
    headers: JSON_HEADERS,
    body: JSON.stringify({ wkIdentity: TOKEN_PAIR_ID, keyToken: 'bench-fcm-device-token' }),
  });
  if (res.status !== 200) throw new Error(`POST /v1/token answered ${res.status}: ${await res.text()}`);
}

/**
 * The delivery guarantee's share of POST /v1/action: a 2 KB request of a type routed to the key sockets but
 * never pushed (an ACTION_TYPES_EXTRA row of the benchmark's relay), whose cross-pod notice carries the record,
 * against the same request under an unrouted type (stored only).
 */
const ROUTED_PAIR: Paired = {
  title: 'POST /v1/action 2 KB routed (event with the record) and stored only',
  names: { with: 'routed', without: 'storedOnly' },
  bodies: {
    with: JSON.stringify({
      ...(JSON.parse(ACTION_BODY) as object),
      action: 'benchrouted',
      payload: '0a'.repeat(1024),
    }),
    without: JSON.stringify({
      ...(JSON.parse(ACTION_BODY) as object),
      action: 'benchnote',
      payload: '0a'.repeat(1024),
    }),
  },
};

/**
 * The issue's delivery goal: ROUTED_PAIR's 2 KB request under a type that is also pushed (its event and its push
 * job), for the pair whose key side has a token, against the same request stored only.
 */
const ROUTED_PUSH_PAIR: Paired = {
  title: 'POST /v1/action 2 KB routed and pushed (event and push intent) and stored only',
  names: { with: 'routedPushed', without: 'storedOnlyTokens' },
  bodies: {
    with: JSON.stringify({
      ...(JSON.parse(ROUTED_PAIR.bodies.with) as object),
      action: 'benchpushed',
      wkIdentity: TOKEN_PAIR_ID,
    }),
    without: JSON.stringify({
      ...(JSON.parse(ROUTED_PAIR.bodies.without) as object),
      wkIdentity: TOKEN_PAIR_ID,
    }),
  },
};

/** A phase of two bodies; `before` prepares the relay for them. */
function pairedPhase(
  name: string,
  key: string,
  paired: Paired,
  medians: (result: PairedResult) => string[],
  before?: (relay: Child) => Promise<void>,
): Phase<PairedResult> {
  return {
    name,
    key,
    async run(bench) {
      if (!bench.withAction) return undefined;
      await before?.(bench.relay);
      const result = await pairedRounds(bench, paired);
      bench.out();
      return result;
    },
    medians,
  };
}

export const push = pairedPhase('push', 'push', PUSH_PAIR, (push) => [
  `POST /v1/action throughput with/without the event and push intent: median ${push.rpsRatio}`,
  `POST /v1/action CPU per request with/without the event and push intent: median ${push.cpuRatio}`,
]);

export const routed = pairedPhase('routed', 'routed', ROUTED_PAIR, (routed) => [
  `POST /v1/action 2 KB throughput routed/stored only: median ${routed.rpsRatio}`,
  `POST /v1/action 2 KB CPU per request routed/stored only: median ${routed.cpuRatio}`,
]);

export const routedPush = pairedPhase(
  'routed-push',
  'routedPush',
  ROUTED_PUSH_PAIR,
  (routedPush) => [
    `POST /v1/action 2 KB throughput routed and pushed/stored only: median ${routedPush.rpsRatio}`,
    `POST /v1/action 2 KB CPU per request routed and pushed/stored only: median ${routedPush.cpuRatio}`,
  ],
  registerKeyToken,
);
