import type { RpcOutcome } from '../../src/providers/json-rpc.js';
import type { FakeReply, RecordedRequest } from './fake-upstream.js';

export type RpcAnswer = RpcOutcome;
export type RpcHandler = (method: string, params: unknown[]) => RpcAnswer;

interface RpcRequest {
  id: unknown;
  method: string;
  params: unknown[];
}

/** A FakeUpstream responder acting as a JSON-RPC node: single calls and batches, answered by `handler`. */
export function jsonRpcNode(handler: RpcHandler): (req: RecordedRequest) => FakeReply {
  const answer = ({ id, method, params }: RpcRequest) => ({ jsonrpc: '2.0', id, ...handler(method, params) });
  return (req) => {
    const body = req.json as RpcRequest | RpcRequest[];
    return { body: Array.isArray(body) ? body.map(answer) : answer(body) };
  };
}

/** The calls a recorded JSON-RPC request carried, as `method` names. */
export function rpcMethods(req: RecordedRequest): string[] {
  const body = req.json as RpcRequest | RpcRequest[];
  return (Array.isArray(body) ? body : [body]).map((call) => call.method);
}

const word = (hex: string) => hex.padStart(64, '0');

/** ABI encoding of a `string` return value. */
export function abiString(text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  const padded = bytes.toString('hex').padEnd(Math.ceil(bytes.length / 32) * 64, '0');
  return `0x${word('20')}${word(bytes.length.toString(16))}${padded}`;
}

/** A `bytes32` return value (old tokens such as MKR return name and symbol this way). */
export function abiBytes32(text: string): string {
  return `0x${Buffer.from(text, 'utf8').toString('hex').padEnd(64, '0')}`;
}

export function abiUint(value: number | bigint): string {
  return `0x${word(value.toString(16))}`;
}
