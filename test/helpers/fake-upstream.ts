import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** `body` parsed as JSON, when it is JSON. */
  json: unknown;
  /** When it arrived (Date.now()). */
  at: number;
}

export interface FakeReply {
  status?: number;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string as is. */
  body?: unknown;
  /** Wait this long before answering (slow upstream). */
  delayMs?: number;
  /** Destroy the socket instead of answering (network error). */
  drop?: boolean;
}

export type Responder = (req: RecordedRequest) => FakeReply | Promise<FakeReply>;

/**
 * A real HTTP server on 127.0.0.1 standing in for a third-party service (helpdesk, price, fee, JSON-RPC).
 * It records every request and answers through a replaceable responder.
 */
export class FakeUpstream {
  readonly requests: RecordedRequest[] = [];
  private server: Server | undefined;
  private responder: Responder = () => ({ status: 200, body: {} });

  get url(): string {
    const { port } = this.server!.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** Sets how the next requests are answered. */
  respond(responder: Responder): this {
    this.responder = responder;
    return this;
  }

  /** Answers the next requests in turn from `replies`; the last one repeats. */
  sequence(replies: FakeReply[]): this {
    let i = 0;
    return this.respond(() => replies[Math.min(i++, replies.length - 1)]!);
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const at = Date.now();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    let json: unknown;
    try {
      json = body ? JSON.parse(body) : undefined;
    } catch {
      json = undefined;
    }
    const recorded: RecordedRequest = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body,
      json,
      at,
    };
    this.requests.push(recorded);
    const reply = await this.responder(recorded);
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    if (reply.drop) {
      req.socket.destroy();
      return;
    }
    const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {});
    res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
    res.end(text);
  }
}
