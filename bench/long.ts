/** `long` phase of `npm run bench`: the relay's memory under a long run of load. */
import { memoryOf, type Memory } from './children.js';
import { drive, type Summary } from './load.js';
import { verdict, type Bench, type Phase } from './phase.js';
import { postAction, seedSync, WALLET_ID } from './requests.js';

interface LongRun {
  seconds: number;
  idle: Memory;
  samples: { atSeconds: number; rssMb: number }[];
  after: Memory;
  get: Summary;
  post?: Summary;
}

/** The relay under sustained load (GET, plus a few POST /v1/action connections when it has them). */
async function longRun(bench: Bench): Promise<LongRun> {
  const { relay, withAction, idle, out, connections, longSeconds } = bench;
  const postConnections = withAction ? Math.max(1, Math.round(connections / 8)) : 0;
  out(
    `long run: ${longSeconds} s, GET at ${connections - postConnections} connections` +
      (withAction ? ` + POST /v1/action at ${postConnections}` : ''),
  );
  await seedSync(relay);
  const samples: LongRun['samples'] = [];
  const started = Date.now();
  const sampler = setInterval(() => {
    void memoryOf(relay.process.pid!).then((m) =>
      samples.push({ atSeconds: Math.round((Date.now() - started) / 1000), rssMb: m.rssMb }),
    );
  }, 10_000);
  const [get, post] = await Promise.all([
    drive(relay.process.pid!, {
      url: `${relay.url}/v1/sync/${WALLET_ID}`,
      connections: connections - postConnections,
      duration: longSeconds,
    }),
    withAction ? postAction(relay, longSeconds, postConnections) : undefined,
  ]);
  clearInterval(sampler);
  const after = await memoryOf(relay.process.pid!);
  out(`relay RSS: ${idle.rssMb} MB idle, ${after.rssMb} MB after the run (peak ${after.peakMb} MB)`);
  return {
    seconds: longSeconds,
    idle,
    samples,
    after,
    get: get.summary,
    ...(post ? { post: post.summary } : {}),
  };
}

export const long: Phase<LongRun> = {
  name: 'long',
  key: 'long',
  run: (bench) => (bench.longSeconds > 0 ? longRun(bench) : Promise.resolve(undefined)),
  medians: (long) => [
    `relay RSS after ${long.seconds} s: ${long.after.rssMb} MB (target < 150: ${verdict(long.after.rssMb < 150)})`,
  ],
};
