/**
 * The fanout phase's key apps, in a process of their own (forked by bench/fanout.ts): one socket per pair, pair i
 * on pod i mod n, each joined with an acknowledgement. Each event's payload starts with the wall-clock time its
 * POST left (`<ms>:<seq>:`); the process reports the latencies, the records received and the duplicates.
 *
 * Messages in: `{ pods: string[], pairs: number, prefix: string }` (connect and join, answers `ready`), `report`
 * (answers the figures since the last report), `close`.
 */
import { io, type Socket } from 'socket.io-client';

export interface ClientsReport {
  latenciesMs: number[];
  received: number;
  duplicates: number;
}

const send = (message: unknown) => process.send!(message);
let sockets: Socket[] = [];
let latencies: number[] = [];
let duplicates = 0;
const seen = new Set<string>();

async function connectAll(pods: string[], pairs: number, prefix: string): Promise<void> {
  sockets = Array.from({ length: pairs }, (_, i) => {
    const socket = io(pods[i % pods.length]!, { path: '/v1/socket/key', transports: ['websocket'] });
    socket.on('wksigningrequest', (record: { payload: string }) => {
      const now = performance.timeOrigin + performance.now();
      const [sentAt, seq] = record.payload.split(':', 2);
      if (seen.has(seq!)) duplicates++;
      else {
        seen.add(seq!);
        latencies.push(now - Number(sentAt));
      }
    });
    return socket;
  });
  for (let i = 0; i < sockets.length; i += 200) {
    await Promise.all(
      sockets.slice(i, i + 200).map(async (socket, j) => {
        const answer = (await socket.emitWithAck('join', { wkIdentity: `${prefix}${i + j}` })) as {
          ok: boolean;
        };
        if (!answer.ok) throw new Error(`join refused: ${JSON.stringify(answer)}`);
      }),
    );
  }
}

process.on('message', (message: unknown) => {
  if (message === 'report') {
    const report: ClientsReport = { latenciesMs: latencies, received: latencies.length, duplicates };
    latencies = [];
    duplicates = 0;
    send(report);
  } else if (message === 'close') {
    for (const socket of sockets) socket.close();
    process.exit(0);
  } else {
    const { pods, pairs, prefix } = message as { pods: string[]; pairs: number; prefix: string };
    connectAll(pods, pairs, prefix).then(
      () => send('ready'),
      (err: unknown) => {
        send({ error: String(err) });
        process.exit(1);
      },
    );
  }
});
