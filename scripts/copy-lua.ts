import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Copies the Lua scripts, which the stores read beside their modules at start-up, into a tsc output directory
 * (tsc copies only what it compiles). Run from the project root once tsc has compiled this file:
 * `node dist/scripts/copy-lua.js dist`.
 */
const outDir = process.argv[2];
if (!outDir) throw new Error('usage: node copy-lua.js <tsc output directory>');
for (const root of ['src', 'worker']) {
  for (const file of readdirSync(root, { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.lua')) continue;
    mkdirSync(dirname(join(outDir, root, file)), { recursive: true });
    copyFileSync(join(root, file), join(outDir, root, file));
  }
}
