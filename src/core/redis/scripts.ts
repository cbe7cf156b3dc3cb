import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RedisClient } from './clients.js';

/** A Lua script as Redis runs it: `<name>-<number of KEYS>.lua` with its includes in place. */
export interface LuaScript {
  readonly file: string;
  readonly numberOfKeys: number;
  readonly lua: string;
}

const SCRIPT_NAME = /-(\d+)\.lua$/;
const INCLUDE = /^--- @include "([^"]+)"$/gm;

/** The code without its comments (the scripts hold no `--` inside strings). */
function code(lua: string): string {
  return lua.replace(/--\[\[[\s\S]*?\]\]/g, '').replace(/--.*$/gm, '');
}

/** The KEYS[n] and ARGV[n] the code names with a literal index (an index computed at run time is left out). */
function literalIndexes(lua: string): string[] {
  return [...code(lua).matchAll(/\b(?:KEYS|ARGV)\[\d+\]/g)].map(([index]) => index);
}

/**
 * Reads a script file (a URL relative to the module that owns it, read once at start-up) and replaces each
 * `--- @include "<path>"` line with the fragment at that path (relative to the script, without `.lua`;
 * fragments include nothing). Refuses a script whose literal KEYS indexes disagree with the count its name
 * declares, and one whose own code names a KEYS or ARGV entry that a fragment it includes consumes.
 */
export function readScript(url: URL): LuaScript {
  const file = fileURLToPath(url);
  const declared = SCRIPT_NAME.exec(basename(file));
  if (!declared) throw new Error(`${file}: a script's name ends in -<number of KEYS>.lua`);
  const own = readFileSync(file, 'utf8');
  const consumed = new Set<string>();
  const lua = own.replace(INCLUDE, (_, path: string) => {
    const fragmentFile = fileURLToPath(new URL(`${path}.lua`, url));
    const fragment = readFileSync(fragmentFile, 'utf8');
    if (fragment.includes('@include')) throw new Error(`${fragmentFile}: a fragment includes nothing`);
    for (const index of literalIndexes(fragment)) consumed.add(index);
    return fragment.trimEnd();
  });
  if (/^--- @include/m.test(lua)) throw new Error(`${file}: an include line is --- @include "<path>"`);
  const taken = literalIndexes(own).filter((index) => consumed.has(index));
  if (taken.length > 0) throw new Error(`${file}: ${taken.join(', ')} belong to an included fragment`);
  const numberOfKeys = Number(declared[1]);
  const highest = Math.max(0, ...[...code(lua).matchAll(/\bKEYS\[(\d+)\]/g)].map(([, n]) => Number(n)));
  const computed = /\bKEYS\[[^\]\d]/.test(code(lua));
  if (highest > numberOfKeys || (!computed && highest < numberOfKeys)) {
    throw new Error(`${file}: its name declares ${numberOfKeys} KEYS, its code uses up to KEYS[${highest}]`);
  }
  return { file, numberOfKeys, lua };
}

/**
 * A Lua script registered on a client (EVALSHA with automatic EVAL fallback after a Redis restart).
 * Returns a typed caller taking the script's keys and arguments. A script must be given every key it touches
 * (KEYS), all in one hash slot: Redis Cluster refuses anything else.
 */
export function defineScript<R>(
  redis: RedisClient,
  name: string,
  script: LuaScript,
): (keys: string[], args: (string | number)[]) => Promise<R> {
  const { file, numberOfKeys, lua } = script;
  redis.defineCommand(name, { numberOfKeys, lua });
  const command = (redis as unknown as Record<string, (...a: (string | number)[]) => Promise<R>>)[name]!;
  return (keys, args) =>
    keys.length === numberOfKeys
      ? command.call(redis, ...keys, ...args)
      : Promise.reject(new Error(`${basename(file)} takes ${numberOfKeys} KEYS, given ${keys.length}`));
}

/** Compare-and-delete: a key is released only by whoever set its value. */
export const DELETE_IF_EQUAL = readScript(new URL('lua/delete-if-equal-1.lua', import.meta.url));
