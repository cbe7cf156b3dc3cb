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

/** Parses the HTTP/1.1 responses with a Content-Length at the start of `raw`, in order; a partial one is left. */
export function parseReplies(raw: Buffer): RawReply[] {
  const replies: RawReply[] = [];
  let rest = raw;
  for (;;) {
    const split = rest.indexOf('\r\n\r\n');
    if (split < 0) return replies;
    const [statusLine, ...lines] = rest.subarray(0, split).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length']);
    const body = rest.subarray(split + 4);
    if (body.length < length) return replies;
    replies.push({
      status: Number(statusLine!.split(' ')[1]),
      headers,
      body: JSON.parse(body.subarray(0, length).toString('utf8')),
    });
    rest = body.subarray(length);
  }
}

/** Parses one HTTP/1.1 response with a Content-Length from the start of `raw`. */
export function parseReply(raw: Buffer): RawReply {
  return parseReplies(raw)[0]!;
}

/**
 * Writes `request` as raw bytes and collects the replies until the server closes the connection or, if given,
 * `count` whole replies arrived (a kept-alive connection is then closed here). `closed`: the server closed it.
 */
export async function rawReplies(
  url: string,
  request: string | Buffer,
  count = Infinity,
): Promise<{ replies: RawReply[]; closed: boolean }> {
  const socket = await openSocket(url);
  const chunks: Buffer[] = [];
  let closed = false;
  socket.on('error', () => {});
  await new Promise<void>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (parseReplies(Buffer.concat(chunks)).length >= count) resolve();
    });
    socket.once('close', () => {
      closed = true;
      resolve();
    });
    socket.write(request);
  });
  socket.destroy();
  return { replies: parseReplies(Buffer.concat(chunks)), closed };
}

/** Writes `request` as raw bytes, collects what the server sends until it closes, and parses the first reply. */
export async function rawExchange(url: string, request: string | Buffer): Promise<RawReply> {
  const reply = (await rawReplies(url, request)).replies[0]!;
  const [method = '', target = ''] = request.toString('latin1').split('\r\n', 1)[0]!.split(' ');
  checkContract(url, {
    method,
    target,
    status: reply.status,
    headers: reply.headers,
    text: JSON.stringify(reply.body),
  });
  return reply;
}
