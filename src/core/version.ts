import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The directory of the package.json Node itself uses for this module's package scope: the nearest one above it
 * (the repository's for src/, the image's /app for dist/src/).
 */
function packageRoot(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error("no package.json above the relay's code");
  }
}

/** The commit checked out in `dir` when it holds a `.git` and `git` answers; otherwise undefined, never an error. */
export function checkoutCommitOf(dir: string): string | undefined {
  if (!existsSync(join(dir, '.git'))) return undefined;
  try {
    const head = execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5000,
    }).trim();
    return /^[0-9a-f]{40,64}$/.test(head) ? head : undefined;
  } catch {
    return undefined;
  }
}

const ROOT = packageRoot();

/** The relay's version (package.json), read once, at load. */
export const RELAY_VERSION = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
).version;

/** The commit of the git checkout the relay runs from (undefined in an image, which has no `.git`), read at load. */
export const CHECKOUT_COMMIT = checkoutCommitOf(ROOT);
