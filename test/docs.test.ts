import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { ROUTES } from '../src/contract/document.js';
import { anchors } from './helpers/markdown.js';

/** The repository stands alone: its docs are the contract, and every link into them lands on a heading. */

const root = new URL('../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');
const tracked = (...paths: string[]) =>
  execFileSync('git', ['ls-files', '--', ...paths], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);

const DOCS: Record<string, string> = {
  'api.md': 'docs/api.md',
  'operations.md': 'docs/operations.md',
  'README.md': 'README.md',
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
        /\b(api\.md|operations\.md|README\.md)#([\p{L}\p{N}_-]+)/gu,
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
    expect(ROUTES.filter((operation) => !headings.has(operation.doc)).map((o) => o.path)).to.deep.equal([]);
  });

  it('docs/api.md lists every body limit the routes use', () => {
    const api = read('docs/api.md');
    for (const limit of ['2 MiB', '640 KiB', '256 KiB', '16 KiB', '64 KiB'])
      expect(api).to.include(`| ${limit}`);
  });
});
