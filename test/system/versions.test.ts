import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { parse, parseAllDocuments } from 'yaml';
import { buildOpenApi } from '../../src/contract/document.js';
import { checkoutCommitOf, RELAY_VERSION } from '../../src/core/version.js';
import { API_ROUTES } from '../../src/features.js';

/**
 * The version (docs/operations.md, "Versions and releases"): main carries the next one as `X.Y.Z-dev`, every
 * place that writes it agrees with package.json, and a git checkout's commit is read without ever failing a start.
 */

const root = fileURLToPath(new URL('../..', import.meta.url));
const read = (file: string) => readFileSync(join(root, file), 'utf8');
const { version } = JSON.parse(read('package.json')) as { version: string };

describe('versions', () => {
  it('package.json names the next version, X.Y.Z-dev, while CHANGELOG.md lists unreleased changes; a release X.Y.Z has its section', () => {
    const [, major, minor, patch, dev] = /^(\d+)\.(\d+)\.(\d+)(-dev)?$/.exec(version) ?? [];
    expect(major, version).to.not.equal(undefined);
    const changelog = read('CHANGELOG.md');
    const unreleased = /^## \[Unreleased\]\n([\s\S]*?)^## \[/m.exec(changelog)![1]!;
    const released = [...changelog.matchAll(/^## \[(\d+)\.(\d+)\.(\d+)\]/gm)].map((m) =>
      m.slice(1, 4).map(Number),
    );
    const number = [major, minor, patch].map(Number);
    if (!dev) {
      expect(/^- /m.test(unreleased), 'entries under Unreleased').to.equal(false);
      expect(released, version).to.deep.include(number);
      return;
    }
    const compare = (a: number[], b: number[]) => a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!;
    for (const release of released) expect(compare(release, number), release.join('.')).to.be.below(0);
  });

  it('package-lock.json, the k8s image tag, docs/asyncapi.yaml, the OpenAPI document and the client package name it', () => {
    const lock = JSON.parse(read('package-lock.json'));
    const [kustomization] = parseAllDocuments(read('k8s/kustomization.yaml')).map((doc) => doc.toJS());
    const image = kustomization.images.find((i: { name: string }) => i.name === 'multisig-relay');
    const named: Record<string, string> = {
      'package-lock.json': lock.version,
      'package-lock.json packages[""]': lock.packages[''].version,
      'k8s/kustomization.yaml newTag': image.newTag,
      'docs/asyncapi.yaml info.version': parse(read('docs/asyncapi.yaml')).info.version,
      '/v1/openapi.json info.version': (buildOpenApi(API_ROUTES, 'standard') as { info: { version: string } })
        .info.version,
      relay_build_info: RELAY_VERSION,
      // The client package, released with the relay under the same number.
      'client/package.json': JSON.parse(read('client/package.json')).version,
    };
    expect(named).to.deep.equal(Object.fromEntries(Object.keys(named).map((place) => [place, version])));
  });

  describe('the commit of a git checkout', () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'relay-version-'));
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('is `git rev-parse HEAD` where the directory holds a .git', () => {
      const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, encoding: 'utf8' }).trim();
      git('init', '-q');
      git(
        '-c',
        'user.name=relay',
        '-c',
        'user.email=relay@example.com',
        'commit',
        '-q',
        '--allow-empty',
        '-m',
        'x',
      );
      expect(checkoutCommitOf(dir))
        .to.equal(git('rev-parse', 'HEAD'))
        .and.match(/^[0-9a-f]{40}$/);
    });

    it('is undefined, never an error, without a .git, with a broken one, or without git on PATH', () => {
      expect(checkoutCommitOf(dir)).to.equal(undefined);
      writeFileSync(join(dir, '.git'), 'gitdir: /nonexistent\n');
      expect(checkoutCommitOf(dir)).to.equal(undefined);
      rmSync(join(dir, '.git'));
      execFileSync('git', ['init', '-q'], { cwd: dir });
      // A repository with no commit has no HEAD to name.
      expect(checkoutCommitOf(dir)).to.equal(undefined);
      const versionModule = fileURLToPath(new URL('../../src/core/version.ts', import.meta.url));
      const noGit = spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          '--input-type=module',
          '-e',
          `const m = await import(${JSON.stringify(versionModule)}); console.log(String(m.checkoutCommitOf(process.argv[1])), m.CHECKOUT_COMMIT)`,
          root,
        ],
        { cwd: root, env: { PATH: '/nonexistent' }, encoding: 'utf8' },
      );
      expect([noGit.status, noGit.stderr, noGit.stdout]).to.deep.equal([0, '', 'undefined undefined\n']);
    });
  });
});
