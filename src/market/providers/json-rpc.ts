import { isRecord, UpstreamError, type Upstream } from '../../core/outbound-http.js';

export interface RpcCall {
  method: string;
  params: unknown[];
}

/** One call's outcome: its result, or the JSON-RPC error the node answered with (`data`: a revert's return data). */
export type RpcOutcome = { result: unknown } | { error: { code: number; message: string; data?: string } };

/**
 * Sends `calls` as one JSON-RPC batch (one round trip) and returns their outcomes in the same order. A missing,
 * duplicated or malformed entry fails the whole batch: the node is not answering properly.
 */
export async function rpcBatch(upstream: Upstream, url: string, calls: RpcCall[]): Promise<RpcOutcome[]> {
  const answer = await upstream.postJson(
    url,
    calls.map((call, id) => ({ jsonrpc: '2.0', id, method: call.method, params: call.params })),
  );
  if (!Array.isArray(answer)) throw new UpstreamError('JSON-RPC answer is not a batch');
  const byId = new Map<unknown, RpcOutcome>();
  for (const entry of answer) {
    if (!isRecord(entry)) continue;
    if (isRecord(entry.error)) {
      const { code, message, data } = entry.error;
      byId.set(entry.id, {
        error: {
          code: typeof code === 'number' ? code : 0,
          message: typeof message === 'string' ? message : '',
          ...(typeof data === 'string' ? { data } : {}),
        },
      });
    } else if ('result' in entry) {
      byId.set(entry.id, { result: entry.result });
    }
  }
  return calls.map((call, id) => {
    const outcome = byId.get(id);
    if (!outcome) throw new UpstreamError(`JSON-RPC answer lacks ${call.method}`);
    return outcome;
  });
}

/** A quantity (`0x…`) as a bigint, or an UpstreamError. */
export function quantity(value: unknown, what: string): bigint {
  if (typeof value !== 'string' || !/^0x[0-9a-fA-F]{1,64}$/.test(value)) {
    throw new UpstreamError(`${what} is not a JSON-RPC quantity`);
  }
  return BigInt(value);
}
