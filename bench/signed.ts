/**
 * POST /v1/action signed vs unsigned vs a stranger's junk signature, on one relay (AUTH_MODE optional, its
 * default): the relay's CPU per request and throughput. Each signed request needs a fresh nonce, so the bodies
 * are signed beforehand (as the apps sign: BIP-137, RFC 6979) and each round sends exactly that many requests.
 */
import { round, type Child } from './children.js';
import { drive, median, type Summary } from './load.js';
import { fmt, HEADER, verdict, type Phase } from './phase.js';
import type { VerifierPath } from '../src/identity/signature.js';
import { dataOf, OTHER_PAIR, PAIR, publicKeyOf, signed, STRANGER_PRIVATE } from '../test/helpers/signing.js';

// The same 10 KB `tx` as the other POST phases, for a pair whose script the signing helper knows.
export const TX = {
  chain: 'btc',
  wkIdentity: PAIR.wkIdentity,
  action: 'tx',
  payload: '0a'.repeat(5 * 1024),
  path: '0-0',
};
const JSON_HEADERS = { 'content-type': 'application/json' };

/** What a stranger can send for a public identity: a random signature and a script it made up. */
function junkBody(): string {
  return JSON.stringify({
    ...TX,
    signature: Buffer.concat([Buffer.of(31), Buffer.alloc(64, 7)]).toString('base64'),
    message: JSON.stringify({
      timestamp: Date.now(),
      action: 'action',
      identity: PAIR.wkIdentity,
      nonce: 'cd'.repeat(32),
      data: dataOf(TX),
    }),
    publicKey: publicKeyOf(STRANGER_PRIVATE),
    witnessScript: OTHER_PAIR.witnessScript,
  });
}

/** `count` signed `tx` bodies, each with a nonce of its own, as the apps sign them. */
export const signedBodies = (count: number) =>
  Array.from({ length: count }, () => JSON.stringify(signed(TX, { purpose: 'action' })));

export interface SignedRound {
  round: number;
  unsigned: Summary;
  signed: Summary;
  junk: Summary;
  signedCpuRatio: number;
  signedRpsRatio: number;
  junkCpuRatio: number;
}

export interface SignedPhaseOptions {
  rounds: number;
  connections: number;
  /** Requests per run (each signed one carries its own nonce). */
  requests: number;
  out: (line?: string) => void;
  header: string;
  fmt: (s: Summary) => string;
}

/** POST /v1/action with each of `bodies` once (and `headers` beside the content type). */
export function postActions(relay: Child, connections: number, bodies: string[], headers = {}) {
  let next = 0;
  return drive(relay.process.pid!, {
    url: `${relay.url}/v1/action`,
    connections,
    amount: bodies.length,
    requests: [
      {
        method: 'POST',
        headers: { ...JSON_HEADERS, ...headers },
        setupRequest: (request) => ({ ...request, body: bodies[next++ % bodies.length] }),
      },
    ],
  });
}

export async function signedPhase(relay: Child, options: SignedPhaseOptions) {
  const { rounds, connections, requests, out, fmt } = options;
  out(`POST /v1/action unsigned, signed, junk-signed: ${rounds} interleaved rounds of ${requests} requests`);
  const unsignedBodies = [JSON.stringify(TX)];
  const junk = Array.from({ length: requests }, junkBody);
  const signBodies = () => signedBodies(requests);
  // Warm-up: every path once at volume.
  await postActions(
    relay,
    connections,
    Array.from({ length: requests }, () => unsignedBodies[0]!),
  );
  await postActions(relay, connections, signBodies());
  out(options.header + ['cpu ratio', 'rps ratio'].map((h) => h.padStart(10)).join(''));
  const results: SignedRound[] = [];
  for (let i = 1; i <= rounds; i++) {
    const pool = signBodies();
    const runs: Record<string, Summary> = {};
    // Alternating the order cancels drift on a busy machine.
    const order = i % 2 ? ['unsigned', 'signed', 'junk'] : ['junk', 'signed', 'unsigned'];
    for (const kind of order) {
      const bodies =
        kind === 'signed'
          ? pool
          : kind === 'junk'
            ? junk
            : Array.from({ length: requests }, () => unsignedBodies[0]!);
      runs[kind] = (await postActions(relay, connections, bodies)).summary;
    }
    const row: SignedRound = {
      round: i,
      unsigned: runs.unsigned!,
      signed: runs.signed!,
      junk: runs.junk!,
      signedCpuRatio: round(runs.signed!.cpuUsPerRequest / runs.unsigned!.cpuUsPerRequest, 2),
      signedRpsRatio: round(runs.signed!.rps / runs.unsigned!.rps, 2),
      junkCpuRatio: round(runs.junk!.cpuUsPerRequest / runs.unsigned!.cpuUsPerRequest, 2),
    };
    results.push(row);
    out(`${`round ${i} unsigned`.padEnd(22)} ${fmt(row.unsigned)}`);
    out(
      `${`round ${i} signed`.padEnd(22)} ${fmt(row.signed)}${[row.signedCpuRatio, row.signedRpsRatio].map((v) => String(v).padStart(10)).join('')}`,
    );
    out(`${`round ${i} junk (401)`.padEnd(22)} ${fmt(row.junk)}${String(row.junkCpuRatio).padStart(10)}`);
  }
  return {
    rounds: results,
    signedCpuRatio: median(results.map((r) => r.signedCpuRatio)),
    signedRpsRatio: median(results.map((r) => r.signedRpsRatio)),
    junkCpuRatio: median(results.map((r) => r.junkCpuRatio)),
    cpuUs: {
      unsigned: median(results.map((r) => r.unsigned.cpuUsPerRequest)),
      signed: median(results.map((r) => r.signed.cpuUsPerRequest)),
      junk: median(results.map((r) => r.junk.cpuUsPerRequest)),
    },
  };
}

type SignedFigures = Awaited<ReturnType<typeof signedPhase>>;

/** The signed phase once per verification path, each on a relay of its own that was told which to take. */
export const signedWrites: Phase<Partial<Record<VerifierPath, SignedFigures>>> = {
  name: 'signed',
  key: 'signed',
  async run({ withAction, startPod, rounds, connections, args, out }) {
    const signed: Partial<Record<VerifierPath, SignedFigures>> = {};
    const verifierPaths: VerifierPath[] = ['node:crypto', 'libsecp256k1'];
    for (const path of withAction ? verifierPaths : []) {
      const pod = await startPod(`relay-${path.replace(':', '-')}`, 0, { SIGNATURE_VERIFIER: path });
      try {
        out(`SIGNATURE_VERIFIER=${path}`);
        signed[path] = await signedPhase(pod, {
          rounds,
          connections,
          requests: Number(args['signed-requests']),
          out,
          header: HEADER,
          fmt,
        });
      } finally {
        await pod.stop();
      }
      out();
    }
    return signed;
  },
  medians: (signed) =>
    Object.entries(signed).flatMap(([path, result]) => [
      `POST /v1/action CPU per request signed/unsigned, ${path}: median ${result.signedCpuRatio} (target <= 1.5: ${verdict(result.signedCpuRatio <= 1.5)})`,
      `POST /v1/action throughput signed/unsigned, ${path}: median ${result.signedRpsRatio}`,
      `POST /v1/action CPU per request junk signature/unsigned, ${path}: median ${result.junkCpuRatio}`,
    ]),
};
