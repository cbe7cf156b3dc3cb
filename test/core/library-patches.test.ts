import { expect } from 'chai';
import { checkPatchedLibraries, installedVersion, PATCHED_VERSIONS } from '../../src/core/library-patches.js';

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
});
