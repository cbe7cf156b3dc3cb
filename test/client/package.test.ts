import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { buildOpenApi } from '../../src/contract/document.js';
import { keysFor } from '../../src/core/redis/keys.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { redis } from '../helpers/redis.js';
import { PAIR } from '../helpers/signing.js';
import { waitFor } from '../helpers/wait.js';
import { API_ROUTES } from '../../src/features.js';

/**
 * The client as a package (client/package.json) and docs/quickstart.md word for word: the quickstart's commands
 * pack the client and install the tarball into a scratch project that holds nothing else; its scripts, run by
 * plain node against a real relay requiring signatures, pair a wallet and a key and exchange a signed request,
 * printing what the quickstart shows; strict NodeNext TypeScript compiles against the installed types. The
 * quickstart's first step (clone, `npm ci && npm start`) is this repository and a test relay.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const keys = keysFor('relay:');

/** The fenced blocks of the quickstart under each `<!-- quickstart: <what> -->` marker, in order. */
function blocksOf(markdown: string): Map<string, string[]> {
  const blocks = new Map<string, string[]>();
  for (const [, what, text] of markdown.matchAll(
    /<!-- quickstart: ([a-z ]+) -->\n\n```[a-z]+\n([\s\S]*?)\n```/g,
  )) {
    blocks.set(what!, [...(blocks.get(what!) ?? []), text!]);
  }
  return blocks;
}

/**
 * npm and node as a new user runs them: without the npm_* variables `npm test` set (its local prefix is this
 * repository), the machine's own NPM_CONFIG_* kept; the cache before the registry.
 */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('npm_')));
  return {
    ...env,
    npm_config_prefer_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
    ...extra,
  };
}

interface Shell {
  child: ChildProcess;
  readonly stdout: string;
  readonly stderr: string;
  exit: Promise<number | null>;
  /** SIGKILL to its process group: a no-op once it exited. */
  kill(): void;
}

/** `script` run by bash -eu in `cwd`, in a process group of its own. */
function shell(script: string, cwd: string, env: NodeJS.ProcessEnv): Shell {
  const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd, env, detached: true });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (out.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out.stderr += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('close', resolve));
  return {
    child,
    get stdout() {
      return out.stdout;
    },
    get stderr() {
      return out.stderr;
    },
    exit,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    },
  };
}

/** Runs `script` to the end; fails with its output unless it exits 0. */
async function run(script: string, cwd: string, env = userEnv()): Promise<string> {
  const done = shell(script, cwd, env);
  const code = await done.exit;
  expect(code, `${script}\n${done.stdout}\n${done.stderr}`).to.equal(0);
  return done.stdout;
}

const packageJson = async (path: string) => JSON.parse(await readFile(path, 'utf8'));

describe('client package and docs/quickstart.md', function () {
  // Packing builds the client with tsc, and the strict check runs tsc again: seconds each on a loaded machine.
  this.timeout(180_000);

  let blocks: Map<string, string[]>;
  let scratch: string;
  let project: string;
  let api: TestApi;
  const children: Shell[] = [];

  before(async () => {
    blocks = blocksOf(await readFile(join(ROOT, 'docs/quickstart.md'), 'utf8'));
    // The quickstart's layout: the clone, and beside it the new project.
    scratch = await mkdtemp(join(tmpdir(), 'relay-quickstart-'));
    await symlink(ROOT, join(scratch, 'multisig-relay'));
    const [install] = blocks.get('install') ?? [];
    expect(install).to.be.a('string');
    await run(install!, scratch);
    project = join(scratch, 'relay-quickstart');
    for (const file of blocks.get('file') ?? []) {
      const name = /^\/\/ ([a-z-]+\.mjs): /.exec(file)?.[1];
      expect(name, file).to.be.a('string');
      await writeFile(join(project, name!), `${file}\n`);
    }
    api = await startTestApi({
      AUTH_MODE: 'required',
      AUTH_ROUTES: 'sync=optional',
      SESSION_KEYS: `k1:${Buffer.alloc(32, 3).toString('base64')}`,
    });
  });

  after(async () => {
    for (const child of children) child.kill();
    await api?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('the package has the relay’s version', async () => {
    const client = await packageJson(join(ROOT, 'client/package.json'));
    expect(client.version).to.equal((await packageJson(join(ROOT, 'package.json'))).version);
  });

  it('the relay and the package are under Apache-2.0: LICENSE, package.json, the OpenAPI info.license', async () => {
    const client = await packageJson(join(ROOT, 'client/package.json'));
    const relay = await packageJson(join(ROOT, 'package.json'));
    expect([client.license, relay.license]).to.deep.equal(['Apache-2.0', 'Apache-2.0']);
    const licence = await readFile(join(ROOT, 'LICENSE'), 'utf8');
    expect(
      licence
        .split('\n')
        .slice(1, 4)
        .map((line) => line.trim()),
    ).to.deep.equal(['Apache License', 'Version 2.0, January 2004', 'http://www.apache.org/licenses/']);
    expect(await readFile(join(ROOT, 'client/LICENSE'), 'utf8')).to.equal(licence);
    expect((buildOpenApi(API_ROUTES).info as { license: unknown }).license).to.deep.equal({
      name: 'Apache-2.0',
      identifier: 'Apache-2.0',
    });
  });

  it('the package depends on exactly what client/*.ts imports, at the root lock’s versions', async () => {
    const client = await packageJson(join(ROOT, 'client/package.json'));
    const lock = await packageJson(join(ROOT, 'package-lock.json'));
    const sources = (await readdir(join(ROOT, 'client'))).filter((file) => file.endsWith('.ts'));
    const imported = new Set<string>();
    for (const file of sources) {
      const text = await readFile(join(ROOT, 'client', file), 'utf8');
      for (const [, specifier] of text.matchAll(/from '([^'.][^']*)'/g)) {
        imported.add(
          specifier!
            .split('/')
            .slice(0, specifier!.startsWith('@') ? 2 : 1)
            .join('/'),
        );
      }
    }
    expect(Object.keys(client.dependencies).sort()).to.deep.equal([...imported].sort());
    // What it builds with too (the root's compiler and Node types).
    for (const [name, version] of Object.entries({ ...client.dependencies, ...client.devDependencies })) {
      expect(lock.packages[`node_modules/${name}`].version, name).to.equal(version);
    }
  });

  it('npm pack writes the built JavaScript, its types, LICENSE, README and package.json: nothing else', async () => {
    const tarballs = (await readdir(project)).filter((file) => file.endsWith('.tgz'));
    const { version } = await packageJson(join(ROOT, 'client/package.json'));
    expect(tarballs).to.deep.equal([`multisig-relay-client-${version}.tgz`]);
    const listed = (await run(`tar -tzf ${tarballs[0]}`, project)).trim().split('\n').sort();
    const modules = (await readdir(join(ROOT, 'client')))
      .filter((file) => file.endsWith('.ts'))
      .map((file) => file.slice(0, -3));
    expect(listed).to.deep.equal(
      [
        'LICENSE',
        'README.md',
        'package.json',
        ...modules.flatMap((name) => [`dist/${name}.js`, `dist/${name}.d.ts`]),
      ]
        .map((file) => `package/${file}`)
        .sort(),
    );
    const licence = await run(`tar -xzOf ${tarballs[0]} package/LICENSE`, project);
    expect(licence).to.equal(await readFile(join(ROOT, 'LICENSE'), 'utf8'));
  });

  it('the scratch project holds the client and its dependencies, none of the relay’s', async () => {
    const installed = (await packageJson(join(project, 'package-lock.json'))).packages;
    const client = await packageJson(join(ROOT, 'client/package.json'));
    expect(installed['node_modules/@multisig-relay/client'].version).to.equal(client.version);
    for (const [name, version] of Object.entries(client.dependencies)) {
      expect(installed[`node_modules/${name}`]?.version, name).to.equal(version);
    }
    const relay = await packageJson(join(ROOT, 'package.json'));
    const relayOnly = Object.keys(relay.dependencies).filter((name) => !(name in client.dependencies));
    expect(relayOnly.filter((name) => `node_modules/${name}` in installed)).to.deep.equal([]);
  });

  it('plain JavaScript: the quickstart’s key and wallet pair and exchange a signed request, printing what it shows', async () => {
    const env = userEnv({ RELAY_URL: api.url });
    const [runKey] = blocks.get('run key')!;
    const [runWallet] = blocks.get('run wallet')!;
    const [keyWaiting, keyAfter] = blocks.get('output key')!;
    const [walletOutput] = blocks.get('output wallet')!;
    expect([runKey, runWallet]).to.deep.equal(['node key.mjs', 'node wallet.mjs']);

    const key = shell(runKey!, project, env);
    children.push(key);
    await waitFor(
      'the key app to wait',
      () => key.stdout === `${keyWaiting}\n` || key.child.exitCode !== null,
    );
    expect(key.stdout, key.stderr).to.equal(`${keyWaiting}\n`);

    const wallet = shell(runWallet!, project, env);
    children.push(wallet);
    expect(await wallet.exit, wallet.stderr).to.equal(0);
    expect(wallet.stdout).to.equal(`${walletOutput}\n`);
    await waitFor('the key app’s reply lines', () => key.stdout === `${keyAfter}\n`);

    // What the relay holds: the pairing record, and the key's reply in the pair's mailbox.
    expect(JSON.parse((await redis().get(keys.sync(PAIR.walletIdentity)))!)).to.deep.equal({
      chain: 'btc',
      walletIdentity: PAIR.walletIdentity,
      keyXpub:
        'xpub661MyMwAqRbcFtXgS5sYJABqqG9YLmC4Q1Rdap9gSE8NqtwybGhePY2gZ29ESFjqJoCu1Rupje8YtGqsefD265TMg7usUDFdp6W1EGMcet8',
      wkIdentity: PAIR.wkIdentity,
    });
    expect(JSON.parse((await redis().get(keys.action(PAIR.wkIdentity)))!)).to.include({
      chain: 'btc',
      wkIdentity: PAIR.wkIdentity,
      action: 'txid',
      payload: 'c0ffee'.padEnd(64, '0'),
    });
    key.kill();
  });

  it('plain JavaScript: a session of the installed package joins with its token, and ends with SessionEnded', async () => {
    await writeFile(
      join(project, 'session.mjs'),
      `import { RelayError, SessionEnded } from '@multisig-relay/client';
import { keyKeys, relay, walletKeys, wkIdentity } from './pair.mjs';

const ended = [];
const session = await relay.session('key', keyKeys, { onEnded: (err) => ended.push(err.reason) });
const { tokenType, side, expiresIn } = session.grant;
console.log(tokenType, side, expiresIn);
const events = session.connectEvents('key', { wkIdentity });
await events.joined;
console.log('joined with the token');
const wallet = await relay.session('wallet', walletKeys);
await wallet.revoke('key');
// Each pod of the relay sees a revocation within a second: read until this one does.
let err;
while (!((err = await session.getAction(wkIdentity).catch((e) => e)) instanceof SessionEnded)) {
  await new Promise((resolve) => setTimeout(resolve, 100));
}
console.log(err instanceof SessionEnded, err instanceof RelayError, err.reason, err.status, err.code, ended.join());
events.close();
wallet.close();
`,
    );
    const output = await run('node session.mjs', project, userEnv({ RELAY_URL: api.url }));
    expect(output).to.equal(
      ['Bearer key 3600', 'joined with the token', 'true true ended 401 AUTH_EXPIRED ended', ''].join('\n'),
    );
  });

  it('strict NodeNext TypeScript compiles against the installed types, and they refuse a wrong call', async () => {
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          noEmit: true,
          skipLibCheck: false,
        },
        files: ['check.ts'],
      }),
    );
    await writeFile(
      join(project, 'check.ts'),
      `import {
  JoinError,
  RelayClient,
  RelayError,
  RelaySession,
  SessionEnded,
  signBody,
  signWalletBody,
  walletIdentityOf,
  wkIdentityOf,
  type ActionRecord,
  type Credential,
  type PairKeys,
  type SessionEndReason,
  type SessionGrant,
  type SyncRecord,
  type WalletCredential,
} from '@multisig-relay/client';

const relay = new RelayClient({ baseUrl: 'http://127.0.0.1:9876', profile: 'ssp-apps' });
const keys: PairKeys = { privateKey: '11'.repeat(32), walletPublicKey: '02aa', keyPublicKey: '03bb' };
const wkIdentity: string = wkIdentityOf(keys.walletPublicKey, keys.keyPublicKey);
const credential: Credential = signBody({ wkIdentity }, 'join', keys);
const record: Promise<ActionRecord> = relay.postAction(
  { chain: 'btc', wkIdentity, action: 'tx', payload: '00', path: '0-0' },
  { sign: keys },
);
const pairing: Promise<SyncRecord> = relay.getSync('1Q1pE5vPGEEMqRcVRMbtBK842Y6Pzo6nK9');
const events = relay
  .connectEvents('key', { wkIdentity, sign: keys, onJoined: () => {}, onRefused: (code: string) => code })
  .on('tx', (request: ActionRecord) => request.payload);
const joined: Promise<void> = events.joined;
const codeOf = (err: unknown): string | undefined =>
  err instanceof RelayError || err instanceof JoinError ? err.code : undefined;
const session: Promise<RelaySession> = relay.session('wallet', keys, {
  renewBeforeSeconds: 600,
  onEnded: (ended: SessionEnded) => ended.reason,
});
const grant = async (): Promise<SessionGrant> => (await session).grant;
const reason = async (): Promise<SessionEndReason> => (await (await session).ended).reason;
const walletPairing = async (): Promise<SyncRecord> => {
  const wallet: RelaySession = await relay.walletSession(keys.privateKey, { testnet: true });
  return wallet.getSync(walletIdentityOf('02aa', true));
};
const walletCredential: WalletCredential = signWalletBody({ walletIdentity: '1x' }, 'session', keys.privateKey);
const sessionEvents = async () => (await session).connectEvents('wallet', { wkIdentity }).joined;
// @ts-expect-error a session is for the 'key' or the 'wallet' side
void relay.session('both', keys);
// @ts-expect-error a token ends with the session: it has no setter
void session.then((s) => (s.grant = { token: '' }));
// @ts-expect-error a side is 'key' or 'wallet'
relay.connectEvents('keys', { wkIdentity });
// @ts-expect-error an action needs its payload
void relay.postAction({ chain: 'btc', wkIdentity, action: 'tx' });
export { codeOf, credential, grant, joined, pairing, reason, record, sessionEvents, walletCredential, walletPairing };
`,
    );
    await run(
      `"${process.execPath}" "${join(ROOT, 'node_modules/typescript/bin/tsc')}" -p tsconfig.json`,
      project,
    );
  });
});
