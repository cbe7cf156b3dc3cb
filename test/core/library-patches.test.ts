import { expect } from 'chai';
import {
  checkPatchedLibraries,
  installedVersion,
  PATCHED_NODE_MAJORS,
  PATCHED_VERSIONS,
} from '../../src/core/library-patches.js';

describe('library patches: start-up version check', () => {
  it('passes with the installed libraries: each is at the version its patch was written for', () => {
    for (const [name, version] of Object.entries(PATCHED_VERSIONS))
      expect(installedVersion(name)).to.equal(version);
    expect(() => checkPatchedLibraries()).not.to.throw();
  });

  it('throws on a mismatch, naming the library, the installed version and the expected one', () => {
    const installed = (name: string) => ({ ioredis: '5.12.0', 'socket.io': '4.8.3' })[name] ?? '0.0.0';
    expect(() => checkPatchedLibraries({ ioredis: '5.11.1', 'socket.io': '4.8.3' }, installed)).to.throw(
      Error,
      'ioredis 5.12.0 is installed, the patches were written for 5.11.1',
    );
  });

  it('names every mismatched library in one message', () => {
    const installed = () => '9.9.9';
    expect(() => checkPatchedLibraries({ ioredis: '5.11.1', '@koa/router': '15.7.0' }, installed)).to.throw(
      Error,
      /ioredis 9\.9\.9 .* 5\.11\.1; @koa\/router 9\.9\.9 .* 15\.7\.0/,
    );
  });

  it('passes on the running Node, and throws on a Node major the patches were not written for, naming both', () => {
    expect(PATCHED_NODE_MAJORS).to.include(Number(process.versions.node.split('.')[0]));
    const installed = (name: string) => PATCHED_VERSIONS[name]!;
    for (const major of [20, 22, 24])
      expect(() => checkPatchedLibraries(PATCHED_VERSIONS, installed, `${major}.1.0`)).not.to.throw();
    expect(() => checkPatchedLibraries(PATCHED_VERSIONS, installed, '26.0.0')).to.throw(
      Error,
      'Node 26.0.0 is running, the patches were written for Node 20, 22, 24',
    );
  });
});
