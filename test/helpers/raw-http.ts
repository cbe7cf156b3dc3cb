import { connect, type Socket } from 'node:net';
import { checkContract } from './contract.js';

export interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests assert on the parsed JSON
}

/** A TCP connection to the API's host and port, ready to write. */
export async function openSocket(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return socket;
}

/** Parses one HTTP/1.1 response with a Content-Length from the start of `raw`. */
export function parseReply(raw: Buffer): RawReply {
  const text = raw.toString('utf8');
  const split = text.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length']);
  const body = raw.subarray(Buffer.byteLength(text.slice(0, split + 4)));
  return {
    status: Number(statusLine!.split(' ')[1]),
    headers,
    body: JSON.parse(body.subarray(0, length).toString('utf8')),
  };
}

/** Writes `request` as raw bytes, collects what the server sends until it closes, and parses the first reply. */
export async function rawExchange(url: string, request: string | Buffer): Promise<RawReply> {
  const socket = await openSocket(url);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => {});
  socket.write(request);
  await closed;
  const reply = parseReply(Buffer.concat(chunks));
  const [method = '', target = ''] = request.toString('latin1').split('\r\n', 1)[0]!.split(' ');
  checkContract({
    method,
    target,
    status: reply.status,
    headers: reply.headers,
    text: JSON.stringify(reply.body),
  });
  return reply;
}
