import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { readScript } from '../../../src/core/redis/scripts.js';
import { redis } from '../../helpers/redis.js';

const root = new URL('../../..', import.meta.url).pathname;

function filesUnder(dir: string, ending: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith(ending))
    .map((file) => join(dir, file));
}

const luaFiles = [...filesUnder('src', '.lua'), ...filesUnder('worker', '.lua')];
const fragments = luaFiles.filter((file) => file.includes('/lua/includes/'));
const scripts = luaFiles.filter((file) => !fragments.includes(file));

/** The leading `--[[ … ]]` block, and the code after it without comments. */
function parts(text: string): { header: string; code: string } {
  const header = /^--\[\[\n([\s\S]*?)\n\]\]\n/.exec(text)?.[1] ?? '';
  const code = text.replace(/--\[\[[\s\S]*?\]\]/g, '').replace(/--.*$/gm, '');
  return { header, code };
}

function indexesIn(code: string): string[] {
  return [...new Set([...code.matchAll(/\b(?:KEYS|ARGV)\[\d+\]/g)].map(([index]) => index))];
}

describe('Lua scripts', () => {
  it('every script lives in a lua/ folder beside its owner and is named <what>-<number of KEYS>.lua', () => {
    expect(scripts.length).to.be.greaterThan(0);
    for (const file of luaFiles) expect(file, file).to.match(/\/lua\//);
    for (const file of scripts) expect(file, file).to.match(/\/lua\/[a-z-]+-\d+\.lua$/);
    for (const file of fragments) expect(file, file).to.match(/\/lua\/includes\/[a-z-]+\.lua$/);
  });

  it('every file starts with a header saying what it does, its input and its output', () => {
    for (const file of luaFiles) {
      const { header } = parts(readFileSync(join(root, file), 'utf8'));
      expect(header, file).to.match(/^ {2}\S/);
      expect(header, file).to.match(/^ {2}Input:/m);
      expect(header, file).to.match(/^ {2}Output:/m);
    }
  });

  it("a script's header names every KEYS its name declares and every KEYS or ARGV its code reads", () => {
    for (const file of scripts) {
      const { header } = parts(readFileSync(join(root, file), 'utf8'));
      const { numberOfKeys, lua } = readScript(pathToFileURL(join(root, file)));
      const keys = Array.from({ length: numberOfKeys }, (_, i) => `KEYS[${i + 1}]`);
      for (const index of new Set([...keys, ...indexesIn(parts(lua).code)])) {
        expect(header, `${file}: ${index}`).to.include(index);
      }
    }
  });

  it("a fragment's header names the locals it declares and the KEYS and ARGV it consumes", () => {
    expect(fragments).to.have.length.greaterThan(0);
    for (const file of fragments) {
      const { header, code } = parts(readFileSync(join(root, file), 'utf8'));
      const declares = /^ {2}Declares:([\s\S]*?)^ {2}Input:/m.exec(header)?.[1] ?? '';
      const locals = [...code.matchAll(/^local (?:function )?([\w, ]+)/gm)].flatMap(([, names]) =>
        names!.split(',').map((name) => name.trim()),
      );
      expect(locals, file).to.have.length.greaterThan(0);
      for (const name of locals) expect(declares, `${file}: ${name}`).to.match(new RegExp(`\\b${name}\\b`));
      for (const index of indexesIn(code)) expect(header, `${file}: ${index}`).to.include(index);
    }
  });

  it('every include resolves, every fragment is included and every script is read by its owner', () => {
    const included = new Set<string>();
    for (const file of scripts) {
      const text = readFileSync(join(root, file), 'utf8');
      for (const [, path] of text.matchAll(/^--- @include "([^"]+)"$/gm)) {
        included.add(relative(root, join(root, file, '..', `${path}.lua`)));
      }
      expect(readScript(pathToFileURL(join(root, file))).lua, file).not.to.include('@include');
    }
    expect([...included].sort()).to.deep.equal([...fragments].sort());
    const sources = [...filesUnder('src', '.ts'), ...filesUnder('worker', '.ts')].map((file) =>
      readFileSync(join(root, file), 'utf8'),
    );
    for (const file of scripts) {
      const name = file.split('/lua/')[1]!;
      expect(
        sources.some((text) => text.includes(`readScript(new URL('lua/${name}', import.meta.url))`)),
        file,
      ).to.equal(true);
    }
  });

  it('Redis compiles every script', async () => {
    for (const file of scripts) {
      const { lua } = readScript(pathToFileURL(join(root, file)));
      expect(await redis().script('LOAD', lua), file).to.match(/^[0-9a-f]{40}$/);
    }
  });

  describe('the loader refuses', () => {
    let dir: string;
    const write = (name: string, text: string) => {
      writeFileSync(join(dir, name), text);
      return pathToFileURL(join(dir, name));
    };
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'lua-'));
      mkdirSync(join(dir, 'includes'));
      write('includes/limit.lua', "local consumed = redis.call('INCR', KEYS[1])\n");
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('a name without its KEYS count', () => {
      expect(() => readScript(write('read.lua', "return redis.call('GET', KEYS[1])\n"))).to.throw(/-<number/);
    });

    it('a name whose KEYS count the code disagrees with', () => {
      expect(() => readScript(write('read-1.lua', "return redis.call('GET', KEYS[2])\n"))).to.throw(
        /declares 1 KEYS/,
      );
      expect(() => readScript(write('read-3.lua', "return redis.call('GET', KEYS[2])\n"))).to.throw(
        /declares 3 KEYS/,
      );
    });

    it("a script reading what an included fragment consumes, as the limit's KEYS[1]", () => {
      const url = write(
        'limited-2.lua',
        `--- @include "includes/limit"\nreturn {consumed, redis.call('GET', KEYS[1]), KEYS[2]}\n`,
      );
      expect(() => readScript(url)).to.throw(/KEYS\[1\] belong to an included fragment/);
    });

    it('an include that does not resolve', () => {
      expect(() =>
        readScript(write('lost-1.lua', '--- @include "includes/none"\nreturn KEYS[1]\n')),
      ).to.throw(/ENOENT/);
    });
  });
});
