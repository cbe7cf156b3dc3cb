import { startTestApi, type TestApi } from './api.js';
import { FakeUpstream } from './fake-upstream.js';
import { abiString, abiUint, jsonRpcNode, tokenNode } from './json-rpc.js';

export const USDC = '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48';
/** What GET /v1/tokeninfo/eth/<USDC> answers from the fake node. */
export const USDC_INFO = {
  network: 'eth',
  address: USDC,
  name: 'USD Coin',
  symbol: 'USDC',
  decimals: 6,
  logo: null,
};

export interface TokenRelay {
  api: TestApi;
  stop(): Promise<void>;
}

/** A test API whose `eth` JSON-RPC node is a fake on 127.0.0.1 answering for an ERC-20 token: USDC. */
export async function startTokenRelay(overrides: Record<string, string>): Promise<TokenRelay> {
  const node = new FakeUpstream();
  await node.start();
  node.respond(
    jsonRpcNode(tokenNode({ name: abiString('USD Coin'), symbol: abiString('USDC'), decimals: abiUint(6) })),
  );
  const api = await startTestApi({ EVM_RPC_ETH: node.url, ...overrides });
  return {
    api,
    stop: async () => {
      await api.stop();
      await node.stop();
    },
  };
}
