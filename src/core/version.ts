import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The relay's version, from the package.json Node itself uses for this module's package scope: the nearest one
 * above it (the repository's for src/, the image's /app/package.json for dist/src/). Read once, at load.
 */
function packageVersion(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
    if (dirname(dir) === dir) throw new Error("no package.json above the relay's code");
  }
}

export const RELAY_VERSION = packageVersion();
