/**
 * `session` phase of `npm run bench`: what sessions cost, on a relay pod with SESSION_KEYS (AUTH_READS open, its
 * default, so a request without a token is served too): one token check in this process; GET /v1/action with a
 * token against without; POST /v1/action (10 KB) carrying a token against unsigned, beside signed; and the
 * relay's CPU per exchange (challenge and exchange) against, driven alike (a few at a time, each awaited), a
 * challenge alone and a small write signed and unsigned: the exchange's own request against one verification.
 */
import { RelayClient, type PairKeys } from '../client/index.js';
import { cpuMsOf, round, type Child } from './children.js';
import { drive, median, medianSummary, type Summary } from './load.js';
import { fmt, HEADER, verdict, type Phase } from './phase.js';
import { JSON_HEADERS } from './requests.js';
import { postActions, signedBodies, TX } from './signed.js';
import { tokenCheckFigures, type TokenCheckFigures } from './token-check.js';
import { KEY_PRIVATE, PAIR, publicKeyOf, signed, WALLET_PRIVATE } from '../test/helpers/signing.js';

const SESSION_KEYS = `bench:${Buffer.alloc(32, 5).toString('base64')}`;
/** The wallet's keys: a `tx` is sent by the wallet side. */
const WALLET_KEYS: PairKeys = {
  privateKey: WALLET_PRIVATE,
  walletPublicKey: publicKeyOf(WALLET_PRIVATE),
  keyPublicKey: publicKeyOf(KEY_PRIVATE),
};
/** Exchanges per round, and how many run at once. */
const EXCHANGES = 200;
const EXCHANGES_AT_ONCE = 8;

export interface SessionRound {
  round: number;
  getPlain: Summary;
  getToken: Summary;
  postUnsigned: Summary;
  postToken: Summary;
  postSigned: Summary;
  /** GET /v1/action requests/s with a token ÷ without, and its CPU per request. */
  getRpsRatio: number;
  getCpuRatio: number;
  /** POST /v1/action CPU per request carrying a token ÷ unsigned, and signed ÷ unsigned. */
  tokenCpuRatio: number;
  signedCpuRatio: number;
  /** The relay's CPU per exchange (its two requests), µs, and per call of each baseline driven alike. */
  exchangeCpuUs: number;
  challengeCpuUs: number;
  smallSignedCpuUs: number;
  smallUnsignedCpuUs: number;
}

// A small `tx`, so that the write's own cost stays near the exchange's and the signature's share shows.
const SMALL_TX = { ...TX, payload: 'deadbeef' };

function getActions(relay: Child, duration: number, connections: number, headers: Record<string, string>) {
  return drive(relay.process.pid!, {
    url: `${relay.url}/v1/action/${PAIR.wkIdentity}`,
    connections,
    duration,
    headers,
  });
}

/** The relay's CPU µs per call over `count` calls, `EXCHANGES_AT_ONCE` at a time, each awaited. */
async function cpuPerCall(relay: Child, count: number, call: () => Promise<unknown>): Promise<number> {
  const before = await cpuMsOf(relay.process.pid!);
  let left = count;
  await Promise.all(
    Array.from({ length: EXCHANGES_AT_ONCE }, async () => {
      // Taken before the await: the workers never make more than `count` calls together.
      while (left-- > 0) await call();
    }),
  );
  return Math.round((1000 * ((await cpuMsOf(relay.process.pid!)) - before)) / count);
}

/** POSTs `body` (JSON) to the relay; throws unless it answers 200. */
async function posted(relay: Child, path: string, body: unknown): Promise<void> {
  const res = await fetch(`${relay.url}${path}`, {
    method: 'POST',
    headers: JSON_HEADERS,
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`POST ${path} answered ${res.status}: ${await res.text()}`);
  await res.arrayBuffer();
}

/** The exchange and its baselines, each over `count` calls driven alike. */
async function exchangeFigures(relay: Child, client: RelayClient, count: number) {
  return {
    exchangeCpuUs: await cpuPerCall(relay, count, async () =>
      (await client.session('wallet', WALLET_KEYS)).close(),
    ),
    challengeCpuUs: await cpuPerCall(relay, count, () =>
      posted(relay, '/v1/session/challenge', { wkIdentity: PAIR.wkIdentity, side: 'wallet' }),
    ),
    smallSignedCpuUs: await cpuPerCall(relay, count, () =>
      posted(relay, '/v1/action', signed(SMALL_TX, { purpose: 'action' })),
    ),
    smallUnsignedCpuUs: await cpuPerCall(relay, count, () => posted(relay, '/v1/action', SMALL_TX)),
  };
}

async function sessionPhase(
  pod: Child,
  options: {
    rounds: number;
    duration: number;
    connections: number;
    requests: number;
    out: (line?: string) => void;
  },
) {
  const { rounds, duration, connections, requests, out } = options;
  const client = new RelayClient({ baseUrl: pod.url });
  const session = await client.session('wallet', WALLET_KEYS);
  const bearer = { authorization: `Bearer ${session.grant.token}` };
  try {
    // The mailbox GET reads: one record, stored with the token (a write the pair's own token passes).
    await session.postAction(TX);
    const unsigned = Array.from({ length: requests }, () => JSON.stringify(TX));
    out(
      `sessions: GET /v1/action ${rounds} rounds of ${duration} s, POST /v1/action ${requests} requests, ${EXCHANGES} exchanges`,
    );
    // Warm-up: every path once.
    await getActions(pod, Math.min(duration, 3), connections, bearer);
    await postActions(pod, connections, unsigned, bearer);
    await exchangeFigures(pod, client, EXCHANGES_AT_ONCE);
    out(HEADER + ['ratio', 'cpu ratio'].map((h) => h.padStart(10)).join(''));
    const results: SessionRound[] = [];
    for (let i = 1; i <= rounds; i++) {
      // Alternating the order cancels drift on a busy machine.
      const forward = i % 2 === 1;
      const gets = forward ? [{}, bearer] : [bearer, {}];
      const [first, second] = [
        await getActions(pod, duration, connections, gets[0]!),
        await getActions(pod, duration, connections, gets[1]!),
      ];
      const [getPlain, getToken] = forward ? [first, second] : [second, first];
      const signed = signedBodies(requests);
      const posts: Record<string, Summary> = {};
      for (const kind of forward ? ['unsigned', 'token', 'signed'] : ['signed', 'token', 'unsigned']) {
        const bodies = kind === 'signed' ? signed : unsigned;
        posts[kind] = (await postActions(pod, connections, bodies, kind === 'token' ? bearer : {})).summary;
      }
      const row: SessionRound = {
        round: i,
        getPlain: getPlain.summary,
        getToken: getToken.summary,
        postUnsigned: posts.unsigned!,
        postToken: posts.token!,
        postSigned: posts.signed!,
        getRpsRatio: round(getToken.summary.rps / getPlain.summary.rps, 2),
        getCpuRatio: round(getToken.summary.cpuUsPerRequest / getPlain.summary.cpuUsPerRequest, 2),
        tokenCpuRatio: round(posts.token!.cpuUsPerRequest / posts.unsigned!.cpuUsPerRequest, 2),
        signedCpuRatio: round(posts.signed!.cpuUsPerRequest / posts.unsigned!.cpuUsPerRequest, 2),
        ...(await exchangeFigures(pod, client, EXCHANGES)),
      };
      results.push(row);
      const ratio = (value: number) => String(value).padStart(10);
      out(`${`round ${i} GET`.padEnd(22)} ${fmt(row.getPlain)}`);
      out(
        `${`round ${i} GET token`.padEnd(22)} ${fmt(row.getToken)}${ratio(row.getRpsRatio)}${ratio(row.getCpuRatio)}`,
      );
      out(`${`round ${i} POST unsigned`.padEnd(22)} ${fmt(row.postUnsigned)}`);
      out(`${`round ${i} POST token`.padEnd(22)} ${fmt(row.postToken)}${ratio(row.tokenCpuRatio)}`);
      out(`${`round ${i} POST signed`.padEnd(22)} ${fmt(row.postSigned)}${ratio(row.signedCpuRatio)}`);
      out(
        `${`round ${i} exchange`.padEnd(22)} relay CPU µs per call: exchange ${row.exchangeCpuUs}, challenge ` +
          `${row.challengeCpuUs}, small write signed ${row.smallSignedCpuUs}, unsigned ${row.smallUnsignedCpuUs}`,
      );
    }
    const of = (field: 'exchangeCpuUs' | 'challengeCpuUs' | 'smallSignedCpuUs' | 'smallUnsignedCpuUs') =>
      median(results.map((r) => r[field]));
    const exchange = { total: of('exchangeCpuUs'), challenge: of('challengeCpuUs') };
    const small = { signed: of('smallSignedCpuUs'), unsigned: of('smallUnsignedCpuUs') };
    return {
      rounds: results,
      medians: {
        getPlain: medianSummary(results.map((r) => r.getPlain)),
        getToken: medianSummary(results.map((r) => r.getToken)),
        postUnsigned: medianSummary(results.map((r) => r.postUnsigned)),
        postToken: medianSummary(results.map((r) => r.postToken)),
        postSigned: medianSummary(results.map((r) => r.postSigned)),
        getRpsRatio: median(results.map((r) => r.getRpsRatio)),
        getCpuRatio: median(results.map((r) => r.getCpuRatio)),
        tokenCpuRatio: median(results.map((r) => r.tokenCpuRatio)),
        signedCpuRatio: median(results.map((r) => r.signedCpuRatio)),
        exchange,
        small,
        /** The exchange's own request (the exchange less its challenge) per signed small write, driven alike. */
        exchangePerSignedWrite: round((exchange.total - exchange.challenge) / small.signed, 2),
        /** The same against the signature's own share of a signed write (signed less unsigned). */
        exchangePerVerification: round(
          (exchange.total - exchange.challenge) / (small.signed - small.unsigned),
          2,
        ),
      },
    };
  } finally {
    session.close();
  }
}

type SessionFigures = Awaited<ReturnType<typeof sessionPhase>> & { tokenCheck: TokenCheckFigures };

export const sessions: Phase<SessionFigures> = {
  name: 'session',
  key: 'session',
  async run({ withAction, startPod, redisUrl, rounds, duration, connections, args, out }) {
    if (!withAction) return undefined;
    const tokenCheck = await tokenCheckFigures(redisUrl, SESSION_KEYS);
    out('one token check, µs (median of batches of awaited calls, in the benchmark process):');
    out(`  a token seen the first time (jose HS256)  ${tokenCheck.firstUs}`);
    out(`  the same token again (remembered)         ${tokenCheck.tokenUs}`);
    out(`  a read's whole check (binding, stamps)    ${tokenCheck.checkUs}`);
    const pod = await startPod('relay-sessions', 0, { SESSION_KEYS });
    try {
      const figures = await sessionPhase(pod, {
        rounds,
        duration,
        connections,
        requests: Number(args['signed-requests']),
        out,
      });
      out();
      return { ...figures, tokenCheck };
    } finally {
      await pod.stop();
    }
  },
  medians: ({ medians: m, tokenCheck }) => [
    `${'GET /v1/action'.padEnd(22)} ${fmt(m.getPlain)}`,
    `${'GET /v1/action token'.padEnd(22)} ${fmt(m.getToken)}`,
    `${'POST unsigned'.padEnd(22)} ${fmt(m.postUnsigned)}`,
    `${'POST token'.padEnd(22)} ${fmt(m.postToken)}`,
    `${'POST signed'.padEnd(22)} ${fmt(m.postSigned)}`,
    `token check: ${tokenCheck.checkUs} µs (the token alone ${tokenCheck.tokenUs}, the first time ${tokenCheck.firstUs}) (target <= 5: ${verdict(tokenCheck.checkUs <= 5)})`,
    `GET /v1/action throughput token/none: median ${m.getRpsRatio} (target >= 0.9: ${verdict(m.getRpsRatio >= 0.9)}); CPU per request: ${m.getCpuRatio}`,
    `POST /v1/action CPU per request token/unsigned: median ${m.tokenCpuRatio} (target <= 1.1: ${verdict(m.tokenCpuRatio <= 1.1)}); signed/unsigned: ${m.signedCpuRatio}`,
    `exchange: ${m.exchange.total} µs of relay CPU (its challenge ${m.exchange.challenge}); a small write signed ${m.small.signed}, unsigned ${m.small.unsigned}: the exchange's request = ${m.exchangePerSignedWrite} × a signed write, ${m.exchangePerVerification} × its signature's share`,
  ],
};
