import { expect } from 'chai';
import { errorBody, get, startTestApi, type TestApi } from '../helpers/api.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import {
  abiBytes32,
  abiString,
  abiUint,
  jsonRpcNode,
  rpcMethods,
  SELECTORS,
  tokenNode,
  type RpcAnswer,
} from '../helpers/json-rpc.js';
import { redis } from '../helpers/redis.js';

const USDC = '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48';
const usdc = USDC.toLowerCase();
const usdcNode = tokenNode({ name: abiString('USD Coin'), symbol: abiString('USDC'), decimals: abiUint(6) });
const usdcInfo = { network: 'eth', address: usdc, name: 'USD Coin', symbol: 'USDC', decimals: 6, logo: null };

describe('GET /v1/tokeninfo/{network}/{address}', () => {
  const node = new FakeUpstream();
  let api: TestApi;
  before(async () => {
    await node.start();
    api = await startTestApi({ EVM_RPC_ETH: node.url, EVM_RPC_BSC: node.url, UPSTREAM_TIMEOUT_MS: '300' });
  });
  after(async () => {
    await api.stop();
    await node.stop();
  });
  beforeEach(() => {
    node.requests.length = 0;
    node.respond(jsonRpcNode(usdcNode));
  });

  it('looks a token up in one JSON-RPC batch and caches it for 24 h', async () => {
    const res = await get(api.url, `/v1/tokeninfo/eth/${USDC}`);
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ success: true, data: usdcInfo });
    expect(node.requests).to.have.length(1);
    expect(rpcMethods(node.requests[0]!)).to.deep.equal(['eth_getCode', 'eth_call', 'eth_call', 'eth_call']);
    const calls = (node.requests[0]!.json as { params: unknown[] }[]).slice(1).map((c) => c.params);
    expect(calls).to.deep.equal(Object.keys(SELECTORS).map((data) => [{ to: usdc, data }, 'latest']));
    const key = `relay:tokeninfo:eth:${usdc}`;
    expect(JSON.parse((await redis().get(key))!)).to.deep.equal({ found: true, token: usdcInfo });
    expect(await redis().ttl(key)).to.be.within(86_395, 86_400);
  });

  it('a cache hit makes no upstream call, whatever the address case', async () => {
    await get(api.url, `/v1/tokeninfo/eth/${usdc}`);
    const again = await get(api.url, `/v1/tokeninfo/eth/${USDC}`);
    expect(again.body).to.deep.equal({ success: true, data: usdcInfo });
    expect(node.requests).to.have.length(1);
  });

  it('20 concurrent misses for one token make one lookup', async () => {
    node.respond((req) => ({ ...jsonRpcNode(usdcNode)(req), delayMs: 100 }));
    const replies = await Promise.all(
      Array.from({ length: 20 }, () => get(api.url, `/v1/tokeninfo/eth/${USDC}`)),
    );
    expect(replies.map((r) => r.status)).to.deep.equal(Array(20).fill(200));
    expect(replies.every((r) => r.body.data.symbol === 'USDC')).to.equal(true);
    expect(node.requests).to.have.length(1);
  });

  it('decodes bytes32 name and symbol (old tokens such as MKR)', async () => {
    node.respond(
      jsonRpcNode(tokenNode({ name: abiBytes32('Maker'), symbol: abiBytes32('MKR'), decimals: abiUint(18) })),
    );
    const mkr = '0x9f8f72aa9304c8b593d555f12ef6589cc3a579a2';
    const res = await get(api.url, `/v1/tokeninfo/bsc/${mkr}`);
    expect(res.body).to.deep.equal({
      success: true,
      data: { network: 'bsc', address: mkr, name: 'Maker', symbol: 'MKR', decimals: 18, logo: null },
    });
  });

  it('404 for an address without code, remembered for 10 min', async () => {
    node.respond(jsonRpcNode(tokenNode({ code: '0x' })));
    const res = await get(api.url, `/v1/tokeninfo/eth/${USDC}`);
    expect(res.status).to.equal(404);
    expect(res.body).to.deep.equal(
      errorBody(res, 'NOT_FOUND', 'This address is not a token contract on this network.'),
    );
    const key = `relay:tokeninfo:eth:${usdc}`;
    expect(JSON.parse((await redis().get(key))!)).to.deep.equal({ found: false });
    expect(await redis().ttl(key)).to.be.within(595, 600);
    expect((await get(api.url, `/v1/tokeninfo/eth/${USDC}`)).status).to.equal(404);
    expect(node.requests).to.have.length(1);
  });

  it('404 for a contract that is not a token (calls revert or return nothing)', async () => {
    node.respond(jsonRpcNode(tokenNode({ name: '0x', symbol: '0x' })));
    const res = await get(api.url, `/v1/tokeninfo/eth/${USDC}`);
    expect(res.status).to.equal(404);
    expect(await redis().ttl(`relay:tokeninfo:eth:${usdc}`)).to.be.within(595, 600);
  });

  // Nodes word a revert differently: geth before 1.10 says -32000 "execution reverted", Nethermind and Erigon
  // attach the revert data under another code.
  const reverts: [string, RpcAnswer][] = [
    ['-32000 "execution reverted"', { error: { code: -32000, message: 'execution reverted' } }],
    [
      'revert data 0x under another code',
      { error: { code: -32015, message: 'VM execution error.', data: '0x' } },
    ],
  ];
  for (const [label, failure] of reverts) {
    it(`404, cached, when the calls revert with ${label}`, async () => {
      node.respond(jsonRpcNode(tokenNode({}, failure)));
      const res = await get(api.url, `/v1/tokeninfo/eth/${USDC}`);
      expect(res.status).to.equal(404);
      expect(res.body).to.deep.equal(
        errorBody(res, 'NOT_FOUND', 'This address is not a token contract on this network.'),
      );
      expect(JSON.parse((await redis().get(`relay:tokeninfo:eth:${usdc}`))!)).to.deep.equal({ found: false });
    });
  }

  const failures: [string, string, () => void][] = [
    ['an HTTP 500', 'HTTP 500', () => node.respond(() => ({ status: 500, body: { error: 'down' } }))],
    ['a dropped connection', 'ECONNRESET', () => node.respond(() => ({ drop: true }))],
    [
      'an answer slower than the timeout',
      'ETIMEDOUT',
      () => node.respond((req) => ({ ...jsonRpcNode(usdcNode)(req), delayMs: 1000 })),
    ],
    ['a non-JSON answer', 'answer is not JSON', () => node.respond(() => ({ body: '<html>busy</html>' }))],
    [
      'an answer that is not a batch',
      'not a batch',
      () => node.respond(() => ({ body: { jsonrpc: '2.0', id: 0, result: '0x' } })),
    ],
    [
      'a batch missing an entry',
      'lacks eth_getCode',
      () => node.respond((req) => ({ body: (jsonRpcNode(usdcNode)(req).body as unknown[]).slice(1) })),
    ],
    [
      'a node error that is not a revert',
      'failed at the node',
      () => node.respond(jsonRpcNode(() => ({ error: { code: -32005, message: 'limit exceeded' } }))),
    ],
    [
      'a lagging node: the contract exists but its calls fail with -32000 "header not found"',
      'symbol() failed at the node',
      () =>
        node.respond(jsonRpcNode(tokenNode({}, { error: { code: -32000, message: 'header not found' } }))),
    ],
    [
      'a 2 MB answer',
      'larger than the limit',
      () =>
        node.respond((req) => ({
          body: [...(jsonRpcNode(usdcNode)(req).body as unknown[]), 'x'.repeat(2e6)],
        })),
    ],
  ];
  for (const [label, logged, fail] of failures) {
    it(`503 and nothing cached on ${label}`, async () => {
      fail();
      const res = await get(api.url, `/v1/tokeninfo/eth/${USDC}`);
      expect(res.status).to.equal(503);
      expect(res.headers.get('retry-after')).to.equal('5');
      expect(res.body).to.deep.equal(
        errorBody(res, 'UNAVAILABLE', 'The eth node is not answering; retry shortly.'),
      );
      expect(await redis().keys('relay:tokeninfo:*')).to.deep.equal([]);
      const warning = api.logs.findLast((line) => line.msg === 'token metadata lookup failed');
      expect(warning?.err).to.include(logged);
      node.respond(jsonRpcNode(usdcNode));
      expect((await get(api.url, `/v1/tokeninfo/eth/${USDC}`)).status).to.equal(200);
    });
  }

  describe('validation: 4xx, no upstream call, nothing written', () => {
    const cases: [string, string, number][] = [
      ['a short address', `/v1/tokeninfo/eth/0x${'a'.repeat(39)}`, 400],
      ['a long address', `/v1/tokeninfo/eth/0x${'a'.repeat(41)}`, 400],
      ['an address without 0x', `/v1/tokeninfo/eth/${'a'.repeat(40)}`, 400],
      ['a non-hex address', `/v1/tokeninfo/eth/0x${'g'.repeat(40)}`, 400],
      ['an address with a trailing newline', `/v1/tokeninfo/eth/${USDC}%0A`, 400],
      ['an encoded slash in the network', `/v1/tokeninfo/eth%2Fx/${USDC}`, 400],
      ['a dot in the network', `/v1/tokeninfo/e.th/${USDC}`, 400],
      ['broken percent-encoding', `/v1/tokeninfo/eth%E0%A4%A/${USDC}`, 400],
      ['a UTXO network', `/v1/tokeninfo/btc/${USDC}`, 404],
      ['an unknown network', `/v1/tokeninfo/solana/${USDC}`, 404],
    ];
    for (const [label, path, status] of cases) {
      it(`${status} for ${label}`, async () => {
        const res = await get(api.url, path);
        expect(res.status).to.equal(status);
        expect(res.body).to.deep.equal(errorBody(res, status === 400 ? 'INVALID_PARAMETER' : 'NOT_FOUND'));
        expect(node.requests).to.deep.equal([]);
        expect(await redis().keys('relay:tokeninfo:*')).to.deep.equal([]);
      });
    }
  });
});
