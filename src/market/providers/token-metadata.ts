import { UpstreamError, type Upstream } from '../../core/outbound-http.js';
import { rpcBatch, type RpcOutcome } from './json-rpc.js';

export interface TokenMetadata {
  name: string;
  symbol: string;
  decimals: number;
}

const SELECTORS = { name: '0x06fdde03', symbol: '0x95d89b41', decimals: '0x313ce567' } as const;

/**
 * A node's answer to a call that reverted, as opposed to a node that cannot answer. Code -32000 alone says
 * nothing: geth uses it for "header not found" and "missing trie node" as well as for older revert answers, so
 * only revert data or a message naming the revert counts; anything else is a failure, never a cached 404.
 */
function reverted(outcome: RpcOutcome): boolean {
  if (!('error' in outcome)) return false;
  const { code, message, data } = outcome.error;
  return code === 3 || /^0x([0-9a-fA-F]{2})*$/.test(data ?? '') || /revert|invalid opcode/i.test(message);
}

function words(hex: string): Buffer {
  return Buffer.from(hex.slice(2), 'hex');
}

const printable = (text: string) => text.replace(/[\u0000-\u001f\u007f]/g, '').trim(); // eslint-disable-line no-control-regex

/** An ABI `string` return value, or the `bytes32` old tokens (MKR, SAI) return instead; undefined if neither. */
function decodeText(hex: string): string | undefined {
  const data = words(hex);
  if (data.length >= 64) {
    const offset = Number(data.readBigUInt64BE(24));
    if (data.subarray(0, 24).every((b) => b === 0) && offset + 32 <= data.length) {
      const length = Number(data.readBigUInt64BE(offset + 24));
      if (data.subarray(offset, offset + 24).every((b) => b === 0) && offset + 32 + length <= data.length) {
        return printable(data.subarray(offset + 32, offset + 32 + length).toString('utf8')) || undefined;
      }
    }
  }
  if (data.length === 32) {
    const end = data.indexOf(0);
    return printable(data.subarray(0, end === -1 ? 32 : end).toString('utf8')) || undefined;
  }
  return undefined;
}

function decodeDecimals(hex: string): number | undefined {
  const data = words(hex);
  if (data.length !== 32 || !data.subarray(0, 31).every((b) => b === 0)) return undefined;
  return data[31]! <= 36 ? data[31] : undefined;
}

/** The call's return data, undefined when it reverted, an UpstreamError when the node failed. */
function returned(outcome: RpcOutcome, what: string): string | undefined {
  if (reverted(outcome)) return undefined;
  if ('error' in outcome) throw new UpstreamError(`${what} failed at the node`);
  const { result } = outcome;
  if (typeof result !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(result)) {
    throw new UpstreamError(`${what} is not hex data`);
  }
  return result;
}

/**
 * ERC-20 metadata in one JSON-RPC batch (eth_getCode plus eth_call of name, symbol, decimals). Null when the
 * address holds no contract, or a contract that does not answer `symbol()` and `decimals()` like a token.
 */
export async function fetchTokenMetadata(
  upstream: Upstream,
  rpcUrl: string,
  address: string,
): Promise<TokenMetadata | null> {
  const call = (data: string) => ({ method: 'eth_call', params: [{ to: address, data }, 'latest'] });
  const [code, name, symbol, decimals] = await rpcBatch(upstream, rpcUrl, [
    { method: 'eth_getCode', params: [address, 'latest'] },
    call(SELECTORS.name),
    call(SELECTORS.symbol),
    call(SELECTORS.decimals),
  ]);
  const bytecode = returned(code!, 'eth_getCode');
  if (bytecode === undefined) throw new UpstreamError('eth_getCode failed at the node');
  if (bytecode === '0x') return null;
  const symbolData = returned(symbol!, 'symbol()');
  const decimalsData = returned(decimals!, 'decimals()');
  const nameData = returned(name!, 'name()');
  const tokenSymbol = symbolData === undefined ? undefined : decodeText(symbolData);
  const tokenDecimals = decimalsData === undefined ? undefined : decodeDecimals(decimalsData);
  if (tokenSymbol === undefined || tokenDecimals === undefined) return null;
  const tokenName = nameData === undefined ? undefined : decodeText(nameData);
  return { name: tokenName ?? tokenSymbol, symbol: tokenSymbol, decimals: tokenDecimals };
}
