import { expect } from 'chai';
import { keysFor } from '../../src/core/redis/keys.js';
import { get, post, startTestApi, type TestApi } from '../helpers/api.js';
import { commandsDuring, redis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';

const keys = keysFor('relay:');
const EPOCH = /^[A-Za-z0-9_-]{8,32}$/;

const request = (wkIdentity: string, payload = 'aa') => ({
  chain: 'btc',
  wkIdentity,
  action: 'tx',
  payload,
  path: '0-0',
});
const reply = (wkIdentity: string) => ({ chain: 'btc', wkIdentity, action: 'txid', payload: 'bb' });

interface Stored {
  id: string;
  epoch: string;
  offset: number;
}

async function store(api: TestApi, body: object): Promise<Stored> {
  const res = await post(api.url, '/v1/action', body);
  expect(res.status).to.equal(200);
  return res.body.data as Stored;
}

/** The metadata's `recordbytes` for these records, oldest first: each record's JSON bytes in ten digits. */
const sizesOf = (records: object[]) =>
  records.map((r) => String(Buffer.byteLength(JSON.stringify(r))).padStart(10, '0')).join('');
const bytesOf = (records: object[]) =>
  String(records.reduce((sum, r) => sum + Buffer.byteLength(JSON.stringify(r)), 0));

/** The stream's entries as Redis holds them: offset and record JSON. */
async function streamOf(wkIdentity: string, side: 'key' | 'wallet') {
  const entries = await redis().xrange(keys.stream(wkIdentity, side), '-', '+');
  return entries.map(([, fields]) => ({ offset: Number(fields[1]), record: JSON.parse(fields[3]!) }));
}

describe("the pair's stream: offsets and epochs (docs/api.md#the-pairs-stream)", () => {
  let a: TestApi;
  let b: TestApi;
  before(async () => {
    [a, b] = await Promise.all([startTestApi(), startTestApi()]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('a stored record carries its epoch and offset: the POST answer, GET, the mailbox and the stream hold the same bytes', async () => {
    const res = await post(a.url, '/v1/action', request('so-same'));
    expect(res.status).to.equal(200);
    const { id, createdAt, expiresAt, epoch } = res.body.data;
    expect(epoch).to.match(EPOCH);
    expect(res.body.data).to.deep.equal({
      id,
      ...request('so-same'),
      createdAt,
      expiresAt,
      epoch,
      offset: 1,
    });
    const text = JSON.stringify(res.body.data);
    expect(await redis().get(keys.action('so-same'))).to.equal(text);
    const read = await get(b.url, '/v1/action/so-same');
    expect(read.body).to.deep.equal(res.body);
    const entries = await redis().xrange(keys.stream('so-same', 'key'), '-', '+');
    expect(entries).to.have.length(1);
    expect(entries[0]![1]).to.deep.equal(['offset', '1', 'record', text]);
    expect(await redis().hgetall(keys.streamMeta('so-same', 'key'))).to.deep.equal({
      epoch,
      offset: '1',
      bytes: String(Buffer.byteLength(text)),
      recordbytes: sizesOf([res.body.data as object]),
    });
    expect(await redis().ttl(keys.stream('so-same', 'key'))).to.be.within(895, 900);
    expect(await redis().ttl(keys.streamMeta('so-same', 'key'))).to.be.within(86_395, 86_400);
    // The direction's keys carry the mailbox's hash tag: one slot on a cluster.
    expect(keys.stream('so-same', 'wallet')).to.equal('relay:stream:wallet:{relay:action:so-same}');
    expect(keys.streamMeta('so-same', 'wallet')).to.equal('relay:streammeta:wallet:{relay:action:so-same}');
  });

  it('each direction counts its own offsets; a type routed nowhere has neither member and no stream', async () => {
    const r1 = await store(a, request('so-dirs'));
    const w1 = await store(b, reply('so-dirs'));
    const r2 = await store(b, request('so-dirs'));
    const w2 = await store(a, reply('so-dirs'));
    expect([r1.offset, r2.offset, w1.offset, w2.offset]).to.deep.equal([1, 2, 1, 2]);
    expect(r2.epoch).to.equal(r1.epoch);
    expect(w2.epoch).to.equal(w1.epoch);
    expect(w1.epoch).to.not.equal(r1.epoch);
    const unknown = await post(a.url, '/v1/action', { ...reply('so-dirs'), action: 'somethingnew' });
    expect(unknown.status).to.equal(200);
    expect(unknown.body.data).to.not.have.any.keys('epoch', 'offset');
    expect((await streamOf('so-dirs', 'key')).map((e) => e.offset)).to.deep.equal([1, 2]);
    expect((await streamOf('so-dirs', 'wallet')).map((e) => e.record.id)).to.deep.equal([w1.id, w2.id]);
  });

  it('concurrent POSTs on two pods: offsets 1…n, no duplicate, in the order the mailbox took the writes', async () => {
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => store(i % 2 ? a : b, request('so-race', `${i}`.padStart(4, '0')))),
    );
    const offsets = answers.map((r) => r.offset).sort((x, y) => x - y);
    expect(offsets).to.deep.equal(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(new Set(answers.map((r) => r.epoch)).size).to.equal(1);
    // The last write the mailbox took holds the highest offset; the stream keeps the last 16 in offset order.
    const mailbox = JSON.parse((await redis().get(keys.action('so-race')))!) as Stored;
    expect(mailbox.offset).to.equal(40);
    const entries = await streamOf('so-race', 'key');
    expect(entries.map((e) => e.offset)).to.deep.equal(Array.from({ length: 16 }, (_, i) => i + 25));
    const byOffset = new Map(answers.map((r) => [r.offset, r]));
    for (const entry of entries) expect(entry.record).to.deep.equal(byOffset.get(entry.offset));
  });

  it('a lost position (metadata gone) starts a new epoch at offset 1 and drops the records of the old one', async () => {
    const first = await store(a, request('so-lost'));
    await store(a, request('so-lost'));
    await redis().del(keys.streamMeta('so-lost', 'key'));
    const next = await store(b, request('so-lost'));
    expect(next.offset).to.equal(1);
    expect(next.epoch).to.match(EPOCH).and.not.equal(first.epoch);
    expect((await streamOf('so-lost', 'key')).map((e) => e.record)).to.deep.equal([next]);
    expect(await redis().hgetall(keys.streamMeta('so-lost', 'key'))).to.deep.equal({
      epoch: next.epoch,
      offset: '1',
      bytes: bytesOf([next]),
      recordbytes: sizesOf([next]),
    });
  });

  it('one script per POST of a routed type: the mailbox write and the append (no extra round trip)', async () => {
    const commands = await commandsDuring(() => store(a, request('so-cmds')));
    const pairKeys = [
      keys.action('so-cmds'),
      keys.stream('so-cmds', 'key'),
      keys.streamMeta('so-cmds', 'key'),
    ];
    const touching = commands.filter((args) => args.some((arg) => pairKeys.includes(arg)));
    expect(touching).to.have.length(1);
    expect(touching[0]![0]!.toLowerCase()).to.be.oneOf(['eval', 'evalsha']);
    expect(touching[0]).to.include.members([
      keys.action('so-cmds'),
      keys.actionVerified('so-cmds'),
      keys.stream('so-cmds', 'key'),
      keys.streamMeta('so-cmds', 'key'),
    ]);
  });
});

describe("the pair's stream: retention (STREAM_LENGTH, STREAM_MAX_BYTES, ACTION_TTL_SECONDS)", () => {
  it('keeps the last STREAM_LENGTH records', async () => {
    const api = await startTestApi({ STREAM_LENGTH: '3' });
    try {
      const stored = [];
      for (let i = 0; i < 5; i++) stored.push(await store(api, request('so-len')));
      expect((await streamOf('so-len', 'key')).map((e) => e.record)).to.deep.equal(stored.slice(2));
      expect(await redis().hgetall(keys.streamMeta('so-len', 'key'))).to.deep.equal({
        epoch: stored[0]!.epoch,
        offset: '5',
        bytes: bytesOf(stored.slice(2)),
        recordbytes: sizesOf(stored.slice(2)),
      });
      // Each append renews both lifetimes.
      expect(await redis().ttl(keys.stream('so-len', 'key'))).to.be.within(895, 900);
      expect(await redis().ttl(keys.streamMeta('so-len', 'key'))).to.be.within(86_395, 86_400);
    } finally {
      await api.stop();
    }
  });

  it('keeps no more than STREAM_MAX_BYTES of record JSON, oldest first; the newest record is always kept', async () => {
    const api = await startTestApi({ STREAM_MAX_BYTES: '65536' });
    try {
      const big = (n: number) => store(api, request('so-bytes', 'ab'.repeat(n)));
      const r1 = await big(10_000); // ~20 KB each
      const r2 = await big(10_000);
      const r3 = await big(10_000);
      expect((await streamOf('so-bytes', 'key')).map((e) => e.offset)).to.deep.equal([1, 2, 3]);
      const r4 = await big(10_000); // four of them are over 64 KiB: the first goes
      expect((await streamOf('so-bytes', 'key')).map((e) => e.record)).to.deep.equal([r2, r3, r4]);
      const huge = await big(40_000); // ~80 KB alone: kept, alone
      expect((await streamOf('so-bytes', 'key')).map((e) => e.record)).to.deep.equal([huge]);
      const meta = await redis().hgetall(keys.streamMeta('so-bytes', 'key'));
      expect(meta.bytes).to.equal(String(Buffer.byteLength(JSON.stringify(huge))));
      expect(meta.offset).to.equal('5');
      expect(r1.epoch).to.equal(huge.epoch);
    } finally {
      await api.stop();
    }
  });

  it('trims by bytes after the count trim when the records left are still over STREAM_MAX_BYTES', async () => {
    const api = await startTestApi({ STREAM_LENGTH: '3', STREAM_MAX_BYTES: '65536' });
    try {
      const r1 = await store(api, request('so-both'));
      const r2 = await store(api, request('so-both', 'ab'.repeat(15_000))); // ~30 KB
      const r3 = await store(api, request('so-both', 'ab'.repeat(15_000)));
      expect((await streamOf('so-both', 'key')).map((e) => e.record)).to.deep.equal([r1, r2, r3]);
      // The count drops r1; r2, r3 and r4 are still over 64 KiB: r2 goes too.
      const r4 = await store(api, request('so-both', 'ab'.repeat(5_000)));
      expect((await streamOf('so-both', 'key')).map((e) => e.record)).to.deep.equal([r3, r4]);
      expect(await redis().hgetall(keys.streamMeta('so-both', 'key'))).to.deep.equal({
        epoch: r1.epoch,
        offset: '4',
        bytes: bytesOf([r3, r4]),
        recordbytes: sizesOf([r3, r4]),
      });
    } finally {
      await api.stop();
    }
  });

  it('a lower STREAM_LENGTH after a restart trims the records over it on the next append', async () => {
    const before = await startTestApi();
    const stored = [];
    try {
      for (let i = 0; i < 5; i++) stored.push(await store(before, request('so-shorter')));
    } finally {
      await before.stop();
    }
    const api = await startTestApi({ STREAM_LENGTH: '2' });
    try {
      stored.push(await store(api, request('so-shorter')));
      expect((await streamOf('so-shorter', 'key')).map((e) => e.record)).to.deep.equal(stored.slice(4));
      expect(
        await redis().hmget(keys.streamMeta('so-shorter', 'key'), 'offset', 'bytes', 'recordbytes'),
      ).to.deep.equal(['6', bytesOf(stored.slice(4)), sizesOf(stored.slice(4))]);
    } finally {
      await api.stop();
    }
  });

  it("an earlier build's metadata (sizes as a list): the position holds, the stream keeps the new record only", async () => {
    const api = await startTestApi();
    try {
      const r1 = await store(api, request('so-earlier'));
      const meta = keys.streamMeta('so-earlier', 'key');
      const size = String(Buffer.byteLength(JSON.stringify(r1)));
      await redis().hdel(meta, 'recordbytes');
      await redis().hset(meta, 'sizes', size);
      const r2 = await store(api, request('so-earlier'));
      expect(r2).to.include({ epoch: r1.epoch, offset: 2 });
      expect((await streamOf('so-earlier', 'key')).map((e) => e.record)).to.deep.equal([r2]);
      expect(await redis().hgetall(meta)).to.deep.equal({
        epoch: r1.epoch,
        offset: '2',
        bytes: bytesOf([r2]),
        sizes: size,
        recordbytes: sizesOf([r2]),
      });
    } finally {
      await api.stop();
    }
  });

  it('a record leaves the stream when it expires; the position outlives it (same epoch, next offset)', async () => {
    const api = await startTestApi({ ACTION_TTL_SECONDS: '1' });
    try {
      const first = await store(api, request('so-ttl'));
      expect(await redis().pttl(keys.stream('so-ttl', 'key'))).to.be.within(1, 1000);
      await waitFor(
        'the stream expired',
        async () => (await redis().exists(keys.stream('so-ttl', 'key'))) === 0,
      );
      expect(await redis().hget(keys.streamMeta('so-ttl', 'key'), 'offset')).to.equal('1');
      const next = await store(api, request('so-ttl'));
      expect(next).to.include({ epoch: first.epoch, offset: 2 });
      expect((await streamOf('so-ttl', 'key')).map((e) => e.record)).to.deep.equal([next]);
      // The expired record's size left the retained bytes.
      expect(await redis().hmget(keys.streamMeta('so-ttl', 'key'), 'bytes', 'recordbytes')).to.deep.equal([
        bytesOf([next]),
        sizesOf([next]),
      ]);
    } finally {
      await api.stop();
    }
  });
});
