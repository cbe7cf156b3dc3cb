import type { RpcOutcome } from '../../src/market/providers/json-rpc.js';
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

export const SELECTORS = { '0x06fdde03': 'name', '0x95d89b41': 'symbol', '0x313ce567': 'decimals' } as const;
export const REVERTED: RpcAnswer = { error: { code: 3, message: 'execution reverted' } };

/**
 * A node holding one ERC-20 contract answering with the given return data (undefined: the call fails with
 * `failure`, a revert unless told otherwise).
 */
export function tokenNode(
  answers: { name?: string; symbol?: string; decimals?: string; code?: string },
  failure = REVERTED,
): RpcHandler {
  return (method, params) => {
    if (method === 'eth_getCode') return { result: answers.code ?? '0x6080604052' };
    const call = params[0] as { data: keyof typeof SELECTORS };
    const data = answers[SELECTORS[call.data]];
    return data === undefined ? failure : { result: data };
  };
}
