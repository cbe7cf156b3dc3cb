import { expect } from 'chai';
import { Redis } from 'ioredis';
import { createRedis, isRedisUnavailable, replyCode } from '../../../src/core/redis/clients.js';
import { freePort, startPrivateRedis, type PrivateRedis } from '../../../src/core/redis/server.js';
import { redis, testRedis } from '../../helpers/redis.js';

/** The error a command rejects with. */
async function failure(command: Promise<unknown>): Promise<Error> {
  return command.then(
    () => expect.fail('the command succeeded'),
    (err: Error) => err,
  );
}

const plain = (port: number, options: object = {}) => {
  const client = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 0, ...options });
  client.on('error', () => {});
  return client;
};

/**
 * Errors are told apart by their kind, from real servers: the reply's code word, a socket's system code, the
 * client's own errors. Every kind but CROSSSLOT means "Redis cannot serve us right now" (→ 503).
 */
describe('Redis error kinds', () => {
  const servers: PrivateRedis[] = [];
  const clients: Redis[] = [];
  const server = async (args: string[] = []) => {
    const started = await startPrivateRedis({ args });
    servers.push(started);
    return started;
  };
  const client = (port: number, options: object = {}) => {
    const made = plain(port, options);
    clients.push(made);
    return made;
  };
  after(async () => {
    for (const made of clients) made.disconnect();
    await Promise.all(servers.map((started) => started.stop()));
  });

  it('credentials the server does not take: NOAUTH, WRONGPASS, NOPERM are 503', async () => {
    const guarded = await server(['--requirepass', 'secret']);
    const noAuth = await failure(client(guarded.port, { enableReadyCheck: false }).get('k'));
    expect(replyCode(noAuth)).to.equal('NOAUTH');
    const wrongPass = await failure(redis().call('AUTH', 'nobody-here', 'wrong'));
    expect(replyCode(wrongPass)).to.equal('WRONGPASS');
    const user = `limited-${process.pid}`;
    await redis().call('ACL', 'SETUSER', user, 'on', '>pw', '-@all', '+ping', '+auth', '+hello', '+info');
    try {
      const limited = client(testRedis().port, { username: user, password: 'pw' });
      const noPerm = await failure(limited.get('k'));
      expect(replyCode(noPerm)).to.equal('NOPERM');
      for (const err of [noAuth, wrongPass, noPerm])
        expect(isRedisUnavailable(err), err.message).to.equal(true);
    } finally {
      await redis().call('ACL', 'DELUSER', user);
    }
  });

  it('a replica refuses writes: READONLY is 503', async () => {
    const master = await server();
    const replica = await server(['--replicaof', '127.0.0.1', String(master.port)]);
    const err = await failure(client(replica.port).set('k', 'v'));
    expect(replyCode(err)).to.equal('READONLY');
    expect(isRedisUnavailable(err)).to.equal(true);
  });

  it('a cluster without its slots answers CLUSTERDOWN (503); keys of two slots in one command are CROSSSLOT (500)', async () => {
    const node = await server(['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf']);
    const admin = client(node.port);
    const down = await failure(admin.get('k'));
    expect(replyCode(down)).to.equal('CLUSTERDOWN');
    expect(isRedisUnavailable(down)).to.equal(true);
    await admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
    const crossSlot = await failure(admin.mset('a', '1', 'b', '2'));
    expect(replyCode(crossSlot)).to.equal('CROSSSLOT');
    expect(isRedisUnavailable(crossSlot)).to.equal(false);
  });

  it('a reply is judged by its code, never by words further in its text', async () => {
    const err = await failure(
      redis().eval("return redis.error_reply('ERR the READONLY replica: Connection is closed')", 0),
    );
    expect(replyCode(err)).to.equal('ERR');
    expect(isRedisUnavailable(err)).to.equal(false);
  });

  it('an unreachable server: a fail-fast command and a refused connection are 503', async () => {
    const port = await freePort();
    const store = createRedis(
      { kind: 'standalone', url: `redis://127.0.0.1:${port}`, explicit: true },
      'store',
    );
    try {
      const refused = await new Promise<Error>((resolve) => store.once('error', resolve));
      expect((refused as NodeJS.ErrnoException).code).to.equal('ECONNREFUSED');
      expect(isRedisUnavailable(refused)).to.equal(true);
      expect(isRedisUnavailable(await failure(store.get('k')))).to.equal(true);
    } finally {
      store.disconnect();
    }
  });
});
