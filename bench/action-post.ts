/** `action-post` phase of `npm run bench`: POST /v1/action with a 10 KB payload, and the relay's RSS per round. */
import { memoryOf } from './children.js';
import { medianSummary, type Summary } from './load.js';
import { fmt, HEADER, type Bench, type Phase } from './phase.js';
import { postAction } from './requests.js';

async function postRounds(bench: Bench): Promise<Summary[]> {
  const { relay, raw, out, rounds, duration, connections, warmup } = bench;
  out(`POST /v1/action (10 KB payload): ${rounds} rounds of ${duration} s, ${connections} connections`);
  await postAction(relay, warmup, connections);
  out(HEADER + '    RSS MB');
  const results: Summary[] = [];
  for (let i = 1; i <= rounds; i++) {
    const r = await postAction(relay, duration, connections);
    (raw.postRelay ??= []).push(r.raw);
    results.push(r.summary);
    const { rssMb } = await memoryOf(relay.process.pid!);
    out(`${`round ${i} relay`.padEnd(22)} ${fmt(r.summary)}${String(rssMb).padStart(10)}`);
  }
  return results;
}

export const actionPost: Phase<{ rounds: Summary[]; median: Summary }> = {
  name: 'action-post',
  key: 'post',
  async run(bench) {
    if (!bench.withAction) {
      bench.out('POST /v1/action: not in this build of the relay (404), skipped');
      return undefined;
    }
    const postResults = await postRounds(bench);
    bench.out();
    return { rounds: postResults, median: medianSummary(postResults) };
  },
  medians: (post) => [`${'POST /v1/action relay'.padEnd(22)} ${fmt(post.median)}`],
};
