import { expect } from 'chai';
import { io, type Socket } from 'socket.io-client';
import type { JoinAnswer } from '../../src/realtime/rooms.js';
import { post, startTestApi, type TestApi } from '../helpers/api.js';
import { OTHER_PAIR, PAIR, signed } from '../helpers/signing.js';
import { waitFor } from '../helpers/wait.js';

/** A plain join's answer beside `ok`: its direction's position and the other side's presence, of a pair never used. */
const PLAIN = { epoch: null, offset: 0, peer: { connected: false, lastSeen: null } };

/**
 * A join the client sends with an acknowledgement callback is answered (docs/api.md#join-and-leave): `{ ok: true, … }`,
 * or `{ ok: false, code }` with the code HTTP would give, and only then the socket is closed, so a client can stop
 * retrying what cannot succeed. Clients that send no callback (the released apps) see what they always saw.
 */
describe('the join acknowledgement', () => {
  let api: TestApi;
  let limited: TestApi;
  const sockets: Socket[] = [];
  before(async () => {
    api = await startTestApi({ AUTH_ROUTES: 'join=required', SOCKET_ROOMS_MAX: '1' });
    // The join budget is the global rate limit's points per window.
    limited = await startTestApi({ RATE_LIMIT_POINTS: '1' });
  });
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.close();
  });
  after(async () => {
    await api.stop();
    await limited.stop();
  });

  /** Connects, sends each join in turn with a callback, and collects the answers and the disconnect reason. */
  async function joins(base: string, data: unknown[], transports = ['polling', 'websocket']) {
    const socket = io(base, { path: '/v1/socket/key', reconnection: false, transports });
    sockets.push(socket);
    const disconnects: string[] = [];
    socket.on('disconnect', (reason) => disconnects.push(reason));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    const answers: JoinAnswer[] = [];
    for (const join of data) {
      answers.push(await socket.timeout(5000).emitWithAck('join', join));
      if (answers.at(-1)?.ok === false) break;
    }
    if (answers.at(-1)?.ok === false) await waitFor('the disconnect', () => disconnects.length > 0);
    return { answers, disconnects };
  }

  const signedJoin = () => signed({ wkIdentity: PAIR.wkIdentity }, { purpose: 'join', by: 'key' });

  it('a signed join is { ok: true } and the socket stays', async () => {
    const { answers, disconnects } = await joins(api.url, [signedJoin()]);
    expect(answers).to.deep.equal([{ ok: true, ...PLAIN }]);
    expect(disconnects).to.deep.equal([]);
  });

  it('a plain join of a direction with a position: { ok, epoch, offset, peer }, no recovered, no replayed', async () => {
    const request = { chain: 'btc', wkIdentity: PAIR.wkIdentity, action: 'tx', payload: 'aa', path: '0-0' };
    const stored = (await post(api.url, '/v1/action', request)).body.data as {
      epoch: string;
      offset: number;
    };
    expect(stored.offset).to.equal(1);
    const { answers } = await joins(api.url, [signedJoin()]);
    expect(answers).to.deep.equal([{ ok: true, epoch: stored.epoch, offset: 1, peer: PLAIN.peer }]);
  });

  for (const [label, data, code] of [
    ['unsigned where joins are required', { wkIdentity: PAIR.wkIdentity }, 'AUTH_REQUIRED'],
    [
      'a credential of the wrong purpose',
      signed({ wkIdentity: PAIR.wkIdentity }, { purpose: 'action' }),
      'AUTH_INVALID',
    ],
  ] as const) {
    it(`${label}: { ok: false, code: ${code} }, then io server disconnect`, async () => {
      const { answers, disconnects } = await joins(api.url, [data]);
      expect(answers).to.deep.equal([{ ok: false, code }]);
      expect(disconnects).to.deep.equal(['io server disconnect']);
    });
  }

  it('over a WebSocket alone, the refusal’s acknowledgement also arrives before the disconnect', async () => {
    const { answers, disconnects } = await joins(api.url, [{ wkIdentity: PAIR.wkIdentity }], ['websocket']);
    expect(answers).to.deep.equal([{ ok: false, code: 'AUTH_REQUIRED' }]);
    expect(disconnects).to.deep.equal(['io server disconnect']);
  });

  it('a bad wkIdentity: INVALID_PARAMETER', async () => {
    const { answers, disconnects } = await joins(limited.url, [{ wkIdentity: 'a/b' }]);
    expect(answers).to.deep.equal([{ ok: false, code: 'INVALID_PARAMETER' }]);
    expect(disconnects).to.deep.equal(['io server disconnect']);
  });

  it('over the join budget, or over SOCKET_ROOMS_MAX: RATE_LIMITED', async () => {
    const budget = await joins(limited.url, [{ wkIdentity: 'pair-a' }, { wkIdentity: 'pair-b' }]);
    expect(budget.answers).to.deep.equal([
      { ok: true, ...PLAIN },
      { ok: false, code: 'RATE_LIMITED' },
    ]);
    const other = signed(
      { wkIdentity: OTHER_PAIR.wkIdentity },
      { purpose: 'join', pair: OTHER_PAIR, by: 'key' },
    );
    const rooms = await joins(api.url, [signedJoin(), other]);
    expect(rooms.answers).to.deep.equal([
      { ok: true, ...PLAIN },
      { ok: false, code: 'RATE_LIMITED' },
    ]);
    expect(rooms.disconnects).to.deep.equal(['io server disconnect']);
  });
});
