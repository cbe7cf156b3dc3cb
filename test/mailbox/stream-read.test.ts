import { expect } from 'chai';
import { API_PROFILES, type ApiProfile } from '../../src/core/config/config.js';
import { registry } from '../../src/core/metrics.js';
import type { Side } from '../../src/core/sides.js';
import { errorBody, get, post, startTestApi, twoPods, type Reply, type TestApi } from '../helpers/api.js';
import { startApiPod } from '../helpers/child.js';
import { readBody, readData } from '../helpers/profile.js';
import { commandsDuring, redis } from '../helpers/redis.js';
import { closedAfterEach, connected, roomSubscribers } from '../helpers/sockets.js';
import {
  keys,
  shardSubscribers,
  startTopology,
  TOPOLOGIES,
  type TestTopology,
} from '../helpers/topologies.js';
import { waitFor } from '../helpers/wait.js';
import { bearer, pairToken, SESSION_ENV } from '../helpers/sessions.js';
import { PAIR, signed } from '../helpers/signing.js';

const TYPES: Record<Side, string> = { key: 'tx', wallet: 'txid' };
const body = (wkIdentity: string, side: Side) => ({
  chain: 'btc',
  wkIdentity,
  action: TYPES[side],
  payload: 'aa',
  path: '0-0',
});

interface Stored {
  id: string;
  action: string;
  epoch: string;
  offset: number;
}

async function store(api: TestApi | { url: string }, room: string, side: Side): Promise<Stored> {
  const res = await post(api.url, '/v1/action', body(room, side));
  expect(res.status).to.equal(200);
  return res.body.data as Stored;
}

const read = (room: string, query: string) => `/v1/action/${room}?${query}`;

async function counter(name: string, labels: Record<string, string> = {}): Promise<number> {
  return (await registry.getSingleMetric(name)!.get()).values
    .filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want))
    .reduce((sum, v) => sum + v.value, 0);
}

const outcomes = (outcome: string) => counter('relay_longpoll_total', { outcome });

/** A stream read's answer as `profile` shapes it. */
function streamBody(
  profile: ApiProfile,
  epoch: string | null,
  offset: number,
  recovered: boolean,
  records: unknown[],
) {
  return readBody(profile, { epoch, offset, recovered, records });
}

const client = closedAfterEach();

for (const profile of API_PROFILES) {
  describe(`stream read GET /v1/action/{id}?to&after&epoch&wait, API_PROFILE=${profile}`, function () {
    this.timeout(60_000);
    const pods = twoPods(() => ({ API_PROFILE: profile }));

    /** A record in a stream read: as the POST answered it (under ssp-apps with expireAt, as stored). */
    const asRead = (record: Stored) => record;

    it('bad parameters: 400 INVALID_PARAMETER naming the parameter, nothing written', async () => {
      const room = `${profile}-bad`;
      const epoch = 'Abcdefgh';
      const cases: [string, string][] = [
        ['to=key', '/query/after'],
        ['after=0', '/query/to'],
        ['to=both&after=0', '/query/to'],
        ['to=key&after=-1', '/query/after'],
        ['to=key&after=1.5', '/query/after'],
        ['to=key&after=01', '/query/after'],
        ['to=key&after=abc', '/query/after'],
        ['to=key&after=', '/query/after'],
        [`to=key&after=9007199254740992&epoch=${epoch}`, '/query/after'],
        ['to=key&after=99999999999999999999', '/query/after'],
        ['to=key&after=3', '/query/epoch'],
        [`to=key&after=3&epoch=short`, '/query/epoch'],
        [`to=key&after=3&epoch=${'a'.repeat(33)}`, '/query/epoch'],
        [`to=key&after=3&epoch=bad%20epoch!`, '/query/epoch'],
        ['to=key&after=0&wait=26', '/query/wait'],
        ['to=key&after=0&wait=-1', '/query/wait'],
        ['to=key&after=0&wait=1.5', '/query/wait'],
        ['to=key&after=0&wait=x', '/query/wait'],
        ['to=key&after=0&after=1', '/query/after'],
        ['to=key&to=wallet&after=0', '/query/to'],
        ['wait=5', '/query/to'],
        [`epoch=${epoch}`, '/query/to'],
      ];
      for (const [query, field] of cases) {
        const res = await get(pods.a.url, read(room, query));
        expect(res.status, query).to.equal(400);
        expect(res.body, query).to.deep.equal(errorBody(res, 'INVALID_PARAMETER'));
        expect(
          res.body.error.details.map((d: { field: string }) => d.field),
          query,
        ).to.include(field);
      }
      expect(await redis().keys(`*${room}*`)).to.deep.equal([]);
    });

    for (const side of ['key', 'wallet'] as const) {
      it(`${side}: the records after the position in its epoch, recovered, as a join with since replays them`, async () => {
        const room = `${profile}-${side}-read`;
        const stored = [
          await store(pods.a, room, side),
          await store(pods.b, room, side),
          await store(pods.a, room, side),
        ];
        const { epoch } = stored[0]!;
        const res = await get(pods.b.url, read(room, `to=${side}&after=1&epoch=${epoch}`));
        expect(res.status).to.equal(200);
        expect(res.headers.get('etag')).to.equal(null);
        expect(res.body).to.deep.equal(streamBody(profile, epoch, 3, true, stored.slice(1).map(asRead)));
        // The same records and recovered as the socket join with the same since.
        const socket = client(pods.a.url, side, undefined);
        await connected(socket);
        const answer = (await socket.socket
          .timeout(5000)
          .emitWithAck('join', { wkIdentity: room, since: { epoch, offset: 1 } })) as Record<string, unknown>;
        expect(answer).to.include({ recovered: true, epoch, offset: 3, replayed: 2 });
        expect(socket.received.map(({ data }) => data)).to.deep.equal(readData(profile, res).records);
        // Up to date: nothing, recovered.
        expect((await get(pods.a.url, read(room, `to=${side}&after=3&epoch=${epoch}`))).body).to.deep.equal(
          streamBody(profile, epoch, 3, true, []),
        );
      });
    }

    it('a foreign epoch: every retained record; an offset past the last one: none; neither recovered', async () => {
      const room = `${profile}-foreign`;
      const stored = [await store(pods.a, room, 'wallet'), await store(pods.a, room, 'wallet')];
      const { epoch } = stored[0]!;
      const all = stored.map(asRead);
      const foreign = await get(pods.a.url, read(room, 'to=wallet&after=1&epoch=OtherEpoch1'));
      expect(foreign.body).to.deep.equal(streamBody(profile, epoch, 2, false, all));
      const ahead = await get(pods.a.url, read(room, `to=wallet&after=7&epoch=${epoch}`));
      expect(ahead.body).to.deep.equal(streamBody(profile, epoch, 2, false, []));
      expect((await get(pods.a.url, read(room, 'to=wallet&after=0'))).body).to.deep.equal(
        streamBody(profile, epoch, 2, true, all),
      );
    });

    it('never 404: a direction never written answers no records, recovered only from offset 0', async () => {
      const room = `${profile}-empty`;
      expect((await get(pods.a.url, read(room, 'to=key&after=0'))).body).to.deep.equal(
        streamBody(profile, null, 0, true, []),
      );
      expect((await get(pods.a.url, read(room, 'to=key&after=2&epoch=Abcdefgh'))).body).to.deep.equal(
        streamBody(profile, null, 0, false, []),
      );
      // The plain read of the same route is unchanged: 404 for the empty mailbox.
      expect((await get(pods.a.url, `/v1/action/${room}`)).status).to.equal(404);
    });

    it('an acknowledged record shows delivered as GET shows it, with wait or without; a join replays it as stored', async () => {
      const room = PAIR.wkIdentity;
      const [first, second] = [await store(pods.a, room, 'key'), await store(pods.b, room, 'key')];
      const credential = signed({}, { purpose: 'ack', by: 'key', identity: room });
      const acked = await post(pods.b.url, `/v1/action/${room}/${second!.id}/ack`, credential);
      expect(acked.status).to.equal(200);
      const mailbox = readData(profile, await get(pods.a.url, `/v1/action/${room}`));
      expect(mailbox).to.deep.equal({ ...second, delivered: acked.body.data.delivered });
      const records = [asRead(first!), mailbox];
      for (const query of ['to=key&after=0', 'to=key&after=0&wait=5']) {
        const res = await get(pods.a.url, read(room, query));
        expect(res.body, query).to.deep.equal(streamBody(profile, first!.epoch, 2, true, records));
      }
      const socket = client(pods.b.url, 'key', undefined);
      await connected(socket);
      await socket.socket.timeout(5000).emitWithAck('join', { wkIdentity: room, since: { offset: 0 } });
      expect(socket.received.map(({ data }) => data)).to.deep.equal([first, second].map((r) => asRead(r!)));
    });

    it('long-poll: held until a POST on the OTHER pod stores a record, then answered with it', async () => {
      const room = `${profile}-woken`;
      const first = await store(pods.a, room, 'key');
      const before = await outcomes('records');
      const held = get(pods.a.url, read(room, `to=key&after=1&epoch=${first.epoch}&wait=20`));
      await waitFor('the held read subscribed', async () => (await roomSubscribers('key', room)) === 1);
      const next = await store(pods.b, room, 'key');
      const res = await held;
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal(streamBody(profile, first.epoch, 2, true, [asRead(next)]));
      expect(await outcomes('records')).to.equal(before + 1);
      // The held read released the pod's subscription.
      await waitFor('unsubscribed', async () => (await roomSubscribers('key', room)) === 0);
    });

    it('long-poll: a POST on the same pod wakes it; a record of the other direction does not', async () => {
      const room = `${profile}-same-pod`;
      const held = get(pods.a.url, read(room, 'to=wallet&after=0&wait=20'));
      await waitFor('the held read subscribed', async () => (await roomSubscribers('wallet', room)) === 1);
      await store(pods.a, room, 'key');
      const next = await store(pods.a, room, 'wallet');
      const res = await held;
      expect(res.body).to.deep.equal(streamBody(profile, next.epoch, 1, true, [asRead(next)]));
    });

    it('long-poll: on timeout no records; the hold costs one rate-limit point and no Redis command while it waits', async () => {
      const room = `${profile}-timeout`;
      const limitKey = 'relay:rl:api:127.0.0.1';
      const points = Number((await redis().get(limitKey)) ?? 0);
      const before = await outcomes('timeout');
      let res: Reply | undefined;
      const commands = await commandsDuring(async () => {
        res = await get(pods.a.url, read(room, 'to=key&after=0&wait=1'));
      });
      expect(res!.status).to.equal(200);
      expect(res!.body).to.deep.equal(streamBody(profile, null, 0, true, []));
      expect(await outcomes('timeout')).to.equal(before + 1);
      expect(Number(await redis().get(limitKey))).to.equal(points + 1);
      // The limit, the read, the subscription, the read once it listens, the unsubscription: nothing else.
      const named = commands.filter((args) => args.some((arg) => arg.includes(room)));
      expect(named.map((args) => args[0]!.toLowerCase().replace(/^eval$/, 'evalsha'))).to.deep.equal([
        'evalsha',
        'ssubscribe',
        'evalsha',
        'sunsubscribe',
      ]);
    });

    it('long-polls of one pair share one subscription of the pod', async () => {
      const room = `${profile}-shared`;
      let held: Promise<Reply>[] = [];
      const commands = await commandsDuring(async () => {
        held = [1, 2, 3].map(() => get(pods.a.url, read(room, 'to=key&after=0&wait=20')));
        await waitFor('three held', async () => (await counter('relay_longpoll_waiting')) >= 3);
      });
      expect(commands.filter((args) => args[0]!.toLowerCase() === 'ssubscribe')).to.have.length(1);
      const next = await store(pods.b, room, 'key');
      for (const res of await Promise.all(held))
        expect(res.body).to.deep.equal(streamBody(profile, next.epoch, 1, true, [asRead(next)]));
    });
  });
}

describe('long-poll bounds: LONGPOLL_PER_IP, SIGTERM', function () {
  this.timeout(60_000);

  it('one over LONGPOLL_PER_IP is answered at once (over_limit); 0 never holds; a held read takes no answer slot', async () => {
    const [one, none] = await Promise.all([
      // One answer in progress per address: the held read must not hold back the reads after it.
      startTestApi({ LONGPOLL_PER_IP: '1', HTTP_ANSWERS_PER_IP: '1' }),
      startTestApi({ LONGPOLL_PER_IP: '0' }),
    ]);
    try {
      const room = 'lp-bound';
      const held = get(one.url, read(room, 'to=key&after=0&wait=20'));
      await waitFor('the held read subscribed', async () => (await roomSubscribers('key', room)) === 1);
      const before = await outcomes('over_limit');
      for (const api of [one, none]) {
        const res = await get(api.url, read(room, 'to=key&after=0&wait=20'));
        expect(res.status).to.equal(200);
        expect(res.body).to.deep.equal({
          success: true,
          data: { epoch: null, offset: 0, recovered: true, records: [] },
        });
      }
      expect(await outcomes('over_limit')).to.equal(before + 2);
      expect((await get(one.url, `/v1/action/${room}`)).status).to.equal(404);
      const next = await store(none, room, 'key');
      expect((await held).body.data.records).to.deep.equal([next]);
    } finally {
      await Promise.all([one.stop(), none.stop()]);
    }
  });

  it('AUTH_READS=required: a stream read needs the pair token as the plain read does; with it, it is answered', async () => {
    const api = await startTestApi({ ...SESSION_ENV, AUTH_READS: 'required' });
    try {
      const path = `/v1/action/${PAIR.wkIdentity}?to=wallet&after=0&wait=1`;
      const refused = await get(api.url, path);
      expect(refused.status).to.equal(401);
      expect(refused.body).to.deep.equal(errorBody(refused, 'AUTH_REQUIRED'));
      const token = await pairToken(api.url, 'key', PAIR);
      const res = await get(api.url, path, bearer(token));
      expect(res.status).to.equal(200);
      expect(Object.keys(res.body.data)).to.deep.equal(['epoch', 'offset', 'recovered', 'records']);
    } finally {
      await api.stop();
    }
  });

  for (const profile of API_PROFILES) {
    it(`SIGTERM answers held reads at once with 200 and what there is (a pod of its own), API_PROFILE=${profile}`, async () => {
      const pod = await startApiPod({ API_PROFILE: profile, SHUTDOWN_TIMEOUT_MS: '20000' });
      try {
        const room = `lp-drain-${profile}`;
        const held = [1, 2].map(() => get(pod.url, read(room, 'to=wallet&after=0&wait=25')));
        await waitFor('the held reads subscribed', async () => (await roomSubscribers('wallet', room)) === 1);
        pod.child.process.kill('SIGTERM');
        for (const res of await Promise.all(held)) {
          expect(res.status).to.equal(200);
          expect(res.body).to.deep.equal(streamBody(profile, null, 0, true, []));
        }
        expect(await pod.child.exit(20_000)).to.equal(0);
      } finally {
        pod.child.kill();
      }
    });
  }
});

/** The wake-up across pods on every topology. */
for (const name of TOPOLOGIES) {
  describe(`long-poll woken by a POST on the other pod, ${name} Redis`, function () {
    this.timeout(60_000);
    let topology: TestTopology;
    before(async () => {
      topology = await startTopology(name);
    });
    const pods = twoPods(() => topology.env);
    // After the pods' own after hook.
    after(() => topology?.stop());

    for (const side of ['key', 'wallet'] as const) {
      it(`${side}: the held read gets the record the other pod stored`, async () => {
        const room = `${name}-lp-${side}`;
        const first = await store(pods.b, room, side);
        const held = get(pods.a.url, read(room, `to=${side}&after=1&epoch=${first.epoch}&wait=20`));
        const channel = keys.roomChannel(side, room);
        await waitFor(
          'the held read subscribed',
          async () => (await shardSubscribers(topology, channel)) === 1,
        );
        const next = await store(pods.b, room, side);
        const res = await held;
        expect(res.body).to.deep.equal({
          success: true,
          data: { epoch: first.epoch, offset: 2, recovered: true, records: [next] },
        });
        const entries = await topology.admin.xrange(keys.stream(room, side), '-', '+');
        expect(entries.map(([, fields]) => JSON.parse(fields[3]!))).to.deep.equal([first, next]);
      });
    }
  });
}
