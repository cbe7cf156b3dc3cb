import type { EvmChain } from '../../core/chains.js';
import { amount, isRecord, UpstreamError, type Upstream } from '../../core/outbound-http.js';
import { quantity, rpcBatch } from './json-rpc.js';

/** One chain's fee levels as served by GET /v1/networkfees (without `coin` and `updatedAt`). */
export interface FeeLevels {
  base?: number;
  economy: number;
  normal: number;
  fast: number;
  recommended: number;
}

/** sat/vB from a mempool-compatible `GET {url}/v1/fees/recommended`. */
export async function fetchMempoolFees(upstream: Upstream, baseUrl: string): Promise<FeeLevels> {
  const answer = await upstream.getJson(`${baseUrl}/v1/fees/recommended`);
  if (!isRecord(answer)) throw new UpstreamError('fee answer is not an object');
  const fast = amount(answer.fastestFee, 'fastestFee');
  return {
    economy: amount(answer.hourFee, 'hourFee'),
    normal: amount(answer.halfHourFee, 'halfHourFee'),
    fast,
    recommended: fast,
  };
}

const WEI_PER_GWEI = 1_000_000_000n;

/** Gwei with wei precision, as a JSON number. */
function gwei(wei: bigint): number {
  return Number(wei / WEI_PER_GWEI) + Number(wei % WEI_PER_GWEI) / 1e9;
}

/**
 * Gwei from one JSON-RPC batch: the latest block's base fee (eth_gasPrice on chains without one), and
 * eth_maxPriorityFeePerGas (gas price minus base fee where a node lacks it), never below `floorGwei`.
 */
export async function fetchEvmFees(
  upstream: Upstream,
  rpcUrl: string,
  floorGwei: number,
  chain: EvmChain,
): Promise<FeeLevels> {
  const [block, gasPrice, tip] = await rpcBatch(upstream, rpcUrl, [
    { method: 'eth_getBlockByNumber', params: ['latest', false] },
    { method: 'eth_gasPrice', params: [] },
    { method: 'eth_maxPriorityFeePerGas', params: [] },
  ]);
  if (!('result' in gasPrice!)) throw new UpstreamError(`${chain}: eth_gasPrice failed`);
  const price = quantity(gasPrice.result, `${chain} gas price`);
  const header = 'result' in block! && isRecord(block.result) ? block.result : undefined;
  const baseFee = header?.baseFeePerGas === undefined ? price : quantity(header.baseFeePerGas, 'base fee');
  const priority =
    'result' in tip! ? quantity(tip.result, `${chain} priority fee`) : price > baseFee ? price - baseFee : 0n;
  const level = (factor: number) => Math.max(Math.round(gwei(priority) * factor * 1e9) / 1e9, floorGwei);
  const fast = level(1.2);
  return { base: gwei(2n * baseFee), economy: level(1), normal: level(1.1), fast, recommended: fast };
}
