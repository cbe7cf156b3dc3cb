import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { keysFor } from '../../src/core/redis/keys.js';
import { k8sDocuments, type Manifest } from '../helpers/manifests.js';
import { anchors, shellBlocks } from '../helpers/markdown.js';
import { redis, testRedis } from '../helpers/redis.js';
import { API_ROUTES } from '../../src/features.js';

/** The repository stands alone: its docs are the contract, and every link into them lands on a heading. */

const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');
const tracked = (...paths: string[]) =>
  execFileSync('git', ['ls-files', '--', ...paths], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);

const DOCS: Record<string, string> = {
  'api.md': 'docs/api.md',
  'operations.md': 'docs/operations.md',
  'README.md': 'README.md',
  'runbook.md': 'docs/runbook.md',
};

/** What the repository itself writes: its docs, code, manifests and tests. */
const OWN_FILES = [
  'README.md',
  'CHANGELOG.md',
  'SECURITY.md',
  'docs',
  'src',
  'worker',
  'k8s',
  'deploy',
  'scripts',
  'bench',
  'client',
  'test',
];

describe('the repository stands alone', () => {
  // Spelled in pieces so that this file does not match itself.
  const outside = [['..', 'shared'].join('/'), ['SPEC', '§'].join(' '), ['SPEC', 'md'].join('.')];

  it('no tracked file points at the contract outside the repository', () => {
    const files = tracked(...OWN_FILES, '.ci');
    expect(files.length).to.be.greaterThan(50);
    const offending = files.flatMap((file) =>
      read(file)
        .split('\n')
        .flatMap((line, i) =>
          outside.some((needle) => line.includes(needle)) ? [`${file}:${i + 1}: ${line}`] : [],
        ),
    );
    expect(offending).to.deep.equal([]);
  });

  it('every link to a section of api.md, operations.md or the README lands on a heading', () => {
    const headings = Object.fromEntries(
      Object.entries(DOCS).map(([name, path]) => [name, anchors(read(path))]),
    );
    // Fixtures are third parties' files (Kubernetes' schemas link to their own READMEs).
    const files = tracked(...OWN_FILES).filter((file) => !file.startsWith('test/fixtures/'));
    const broken: string[] = [];
    for (const file of files) {
      const text = read(file);
      for (const [, doc, anchor] of text.matchAll(
        /\b(api\.md|operations\.md|README\.md|runbook\.md)#([\p{L}\p{N}_-]+)/gu,
      )) {
        if (!headings[doc!]!.has(anchor!)) broken.push(`${file}: ${doc}#${anchor}`);
      }
      const own = Object.entries(DOCS).find(([, path]) => path === file)?.[0];
      if (own) {
        for (const [, anchor] of text.matchAll(/\]\(#([\p{L}\p{N}_-]+)\)/gu)) {
          if (!headings[own]!.has(anchor!)) broken.push(`${file}: #${anchor}`);
        }
      }
    }
    expect(broken).to.deep.equal([]);
  });

  it('every endpoint of the OpenAPI document names the docs/api.md section that explains it', () => {
    const headings = anchors(read('docs/api.md'));
    expect(API_ROUTES.filter((operation) => !headings.has(operation.doc)).map((o) => o.path)).to.deep.equal(
      [],
    );
  });

  it('docs/api.md lists every body limit the routes use', () => {
    const api = read('docs/api.md');
    for (const limit of ['2 MiB', '640 KiB', '256 KiB', '16 KiB', '64 KiB'])
      expect(api).to.include(`| ${limit}`);
  });

  it("the README's API table names every endpoint the relay mounts", () => {
    const readme = read('README.md');
    const table = readme.slice(readme.indexOf('\n## API\n'), readme.indexOf('\n## Configuration\n'));
    const rows = table.split('\n').filter((line) => line.startsWith('| GET') || line.startsWith('| POST'));
    const missing = API_ROUTES.filter(
      (route) =>
        !rows.some(
          (row) => row.startsWith(`| ${route.method.toUpperCase()} `) && row.includes(`\`${route.path}\``),
        ),
    ).map((route) => `${route.method.toUpperCase()} ${route.path}`);
    expect(missing).to.deep.equal([]);
    // One table: a row after a blank line would be a table of its own.
    expect(table).to.not.match(/\|\n\n\|/);
  });
});

describe('the redis-cli and kubectl recipes of the operations guide and the runbook', () => {
  const DOCS_WITH_RECIPES = ['docs/operations.md', 'docs/runbook.md'];
  /** Every one-line `--scan --pattern … | <count>` of the docs' shell blocks, with the file it is in. */
  const counts = DOCS_WITH_RECIPES.flatMap((file) =>
    shellBlocks(read(file)).flatMap((block) =>
      block
        .split('\n')
        .map((line) => line.replace(/\s+#.*$/, '').trim())
        .filter((line) => /^redis-cli .*--scan --pattern '[^']+' \| (wc -l|grep -vc .+)$/.test(line))
        .map((line) => ({ file, line })),
    ),
  );

  it('each record count counts the records of its pattern only (run against a Redis holding each kind, and the markers beside them)', async () => {
    const keys = keysFor('relay:');
    // Identities may hold a colon: one mailbox's identity starts as the markers' key does.
    for (const wk of ['wk1', 'verified:wk2']) {
      await redis().set(keys.action(wk), '{}');
      await redis().set(keys.actionVerified(wk), '1');
    }
    await redis().set(keys.sync('w1'), '{}');
    await redis().set(keys.recoveryPub('wk1'), '{}');
    const expected: Record<string, number> = {
      'relay:action:*': 2,
      'relay:sync:*': 1,
      'relay:recoverypub:*': 1,
    };
    expect(new Set(counts.map(({ line }) => /--pattern '([^']+)'/.exec(line)![1]))).to.deep.equal(
      new Set(Object.keys(expected)),
    );
    for (const { file, line } of counts) {
      // The recipes' redis-cli, pointed at the test's Redis whatever URL the recipe names (a cluster node's).
      const script =
        'redis-cli() { local a=(); while [ $# -gt 0 ]; do if [ "$1" = -u ]; then shift 2; else a+=("$1"); shift; fi; done; ' +
        `command redis-cli -u "$REDIS_URL" "\${a[@]}"; }\n${line}`;
      const { stdout } = await promisify(execFile)('bash', ['-c', script], {
        env: { ...process.env, REDIS_URL: testRedis().url },
      }).catch((err: { stdout: string }) => err); // grep -c exits 1 when it counts 0
      const pattern = /--pattern '([^']+)'/.exec(line)![1]!;
      expect(Number(stdout.trim()), `${file}: ${line}`).to.equal(expected[pattern]);
    }
  });

  it('every kubectl command of the runbook names the namespace, and the Deployments, labels and objects k8s/ has', () => {
    const manifests = k8sDocuments().map(({ doc }) => doc);
    const named = (kind: string) =>
      new Set(manifests.filter((doc) => doc.kind === kind).map((doc) => doc.metadata.name as string));
    const podLabels = manifests
      .filter((doc) => doc.kind === 'Deployment')
      .map((doc) => doc.spec.template.metadata.labels as Record<string, string>);
    const containers = new Set(
      manifests
        .filter((doc) => doc.kind === 'Deployment')
        .flatMap((doc) => (doc.spec.template.spec.containers as Manifest[]).map((c) => c.name as string)),
    );
    const commands = shellBlocks(read('docs/runbook.md'))
      .join('\n')
      .replace(/\\\n\s*/g, '')
      .split('\n')
      .filter((line) => line.trimStart().startsWith('kubectl '));
    expect(commands.length).to.be.greaterThan(30);
    const wrong: string[] = [];
    for (const command of commands) {
      if (!command.includes(' -n multisig-relay ')) wrong.push(`no namespace: ${command}`);
      for (const [, name] of command.matchAll(/\bdeployment\/([\w-]+)/g))
        if (!named('Deployment').has(name!)) wrong.push(`no Deployment ${name}: ${command}`);
      for (const [, kind, name] of command.matchAll(
        /\b(deployment|hpa|configmap|networkpolicy|secret) (multisig-relay[\w-]*)/g,
      )) {
        const kinds: Record<string, string> = {
          deployment: 'Deployment',
          hpa: 'HorizontalPodAutoscaler',
          configmap: 'ConfigMap',
          networkpolicy: 'NetworkPolicy',
          secret: 'Secret',
        };
        // The Secret is made from k8s/secret.example.yaml, which the kustomization leaves out on purpose.
        const known = kind === 'secret' ? name === 'multisig-relay' : named(kinds[kind!]!).has(name!);
        if (!known) wrong.push(`no ${kind} ${name}: ${command}`);
      }
      for (const [, selector] of command.matchAll(/(?:-l |--labels=)(\S+)/g)) {
        const wanted = Object.fromEntries(selector!.split(',').map((pair) => pair.split('=')));
        if (!podLabels.some((labels) => Object.entries(wanted).every(([k, v]) => labels[k] === v)))
          wrong.push(`no pods labelled ${selector}: ${command}`);
      }
      for (const [, container] of command.matchAll(/ set image deployment\/[\w-]+ (\w+)=/g))
        if (!containers.has(container!)) wrong.push(`no container ${container}: ${command}`);
    }
    expect(wrong).to.deep.equal([]);
  });

  it('the next upgrade note asks for the maxSurge k8s/api-deployment.yaml ships, with the commands to roll it', () => {
    const api = k8sDocuments().find(
      ({ doc }) => doc.kind === 'Deployment' && doc.metadata.name === 'multisig-relay-api',
    )!;
    const surge = api.doc.spec.strategy.rollingUpdate.maxSurge as string;
    expect(surge).to.equal('100%');
    const guide = read('docs/operations.md');
    const note = guide.slice(
      guide.indexOf('### Upgrading to the next release'),
      guide.indexOf('### Upgrading to 1.0.0'),
    );
    expect(note).to.include(`\`maxSurge: ${surge}\``);
    expect(note).to.include('kubectl apply -k k8s/ -n multisig-relay');
    expect(note).to.include('kubectl -n multisig-relay rollout status deployment/multisig-relay-api');
    expect(note).to.include(`"maxSurge":"${surge}"`);
  });
});
