import { EVM_CHAINS } from '../../src/core/chains.js';
import { FakeUpstream } from './fake-upstream.js';
import { jsonRpcNode, type RpcAnswer } from './json-rpc.js';

export const PRICES: Record<string, number> = {
  bitcoin: 97000.1,
  ethereum: 3500.2,
  tether: 1,
  zelcash: 0.5,
  litecoin: 90,
  'polygon-ecosystem-token': 0.25,
  solana: 140.5,
};
export const FIAT = { USD: 1, EUR: 0.92, GBP: 0.79, JPY: 150.5 };
export const BTC_FEES = { fastestFee: 20, halfHourFee: 15, hourFee: 10, economyFee: 5, minimumFee: 1 };
export const LTC_FEES = { fastestFee: 3, halfHourFee: 2, hourFee: 1, economyFee: 1, minimumFee: 1 };

const gwei = (value: number) => `0x${BigInt(Math.round(value * 1e9)).toString(16)}`;

/** Per EVM chain: base fee (undefined: a legacy chain without one), gas price and tip, in gwei; null tip: unsupported. */
export const EVM_NODE: Record<string, { baseFee?: number; gasPrice: number; tip: number | null }> = {
  eth: { baseFee: 10, gasPrice: 11.5, tip: 1.5 },
  sepolia: { baseFee: 1, gasPrice: 2, tip: 1 },
  polygon: { baseFee: 50, gasPrice: 85, tip: 35 },
  amoy: { baseFee: 30, gasPrice: 31, tip: 1 },
  base: { baseFee: 0.005, gasPrice: 0.006, tip: 0.001 },
  bsc: { gasPrice: 0.1, tip: null },
  avax: { baseFee: 2, gasPrice: 3, tip: 1 },
};

function evmAnswer(chain: string, method: string): RpcAnswer {
  const node = EVM_NODE[chain]!;
  switch (method) {
    case 'eth_getBlockByNumber':
      return {
        result: {
          number: '0x1',
          ...(node.baseFee === undefined ? {} : { baseFeePerGas: gwei(node.baseFee) }),
        },
      };
    case 'eth_gasPrice':
      return { result: gwei(node.gasPrice) };
    case 'eth_maxPriorityFeePerGas':
      return node.tip === null
        ? { error: { code: -32601, message: 'the method does not exist' } }
        : { result: gwei(node.tip) };
    default:
      return { error: { code: -32601, message: 'the method does not exist' } };
  }
}

/** Every market provider as a fake on 127.0.0.1, answering like the real ones by default. */
export class MarketFakes {
  readonly crypto = new FakeUpstream();
  readonly fiat = new FakeUpstream();
  readonly btc = new FakeUpstream();
  readonly ltc = new FakeUpstream();
  /** One JSON-RPC node for every EVM chain: the chain is the path (`/eth`, `/bsc`, …). */
  readonly rpc = new FakeUpstream();

  private get all(): FakeUpstream[] {
    return [this.crypto, this.fiat, this.btc, this.ltc, this.rpc];
  }

  async start(): Promise<this> {
    await Promise.all(this.all.map((fake) => fake.start()));
    this.reset();
    return this;
  }

  async stop(): Promise<void> {
    await Promise.all(this.all.map((fake) => fake.stop()));
  }

  /** Back to good answers, with no recorded requests. */
  reset(): void {
    for (const fake of this.all) fake.requests.length = 0;
    this.crypto.respond((req) => {
      const ids = new URL(req.path, 'http://x').searchParams.get('ids')?.split(',') ?? [];
      return {
        body: Object.fromEntries(ids.filter((id) => id in PRICES).map((id) => [id, { usd: PRICES[id] }])),
      };
    });
    this.fiat.respond(() => ({ body: { result: 'success', base_code: 'USD', rates: FIAT } }));
    this.btc.respond(() => ({ body: BTC_FEES }));
    this.ltc.respond(() => ({ body: LTC_FEES }));
    this.rpc.respond((req) => jsonRpcNode((method) => evmAnswer(req.path.slice(1), method))(req));
  }

  env(): Record<string, string> {
    return {
      RATES_CRYPTO_URL: this.crypto.url,
      RATES_FIAT_URL: `${this.fiat.url}/v6/latest/USD`,
      FEES_BTC_URL: `${this.btc.url}/api`,
      FEES_LTC_URL: `${this.ltc.url}/api`,
      ...Object.fromEntries(
        EVM_CHAINS.map((chain) => [`EVM_RPC_${chain.toUpperCase()}`, `${this.rpc.url}/${chain}`]),
      ),
      UPSTREAM_TIMEOUT_MS: '300',
    };
  }
}
