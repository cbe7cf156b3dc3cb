/**
 * Where the relay's time goes: self time of a `--cpu-prof` profile (npm run bench -- --profile) grouped by
 * package / source file and by function.
 *
 *   npx tsx bench/profile-summary.ts .bench/profiles/<file>.cpuprofile [top]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error('usage: profile-summary.ts <file.cpuprofile> [top]');
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));

/** node_modules/<package>, a project file, node:<internal>, or V8's own buckets ((garbage collector), ...). */
function area(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return url;
  const own = /\/((?:src|bench|worker)\/.*)$/.exec(url);
  return own ? own[1]! : url;
}

const byArea = new Map<string, number>();
const byFunction = new Map<string, number>();
let total = 0;
profile.samples.forEach((id, i) => {
  const node = byId.get(id);
  const delta = profile.timeDeltas[i] ?? 0;
  if (!node) return;
  const { functionName, url, lineNumber } = node.callFrame;
  const where = area(url, functionName);
  total += delta;
  byArea.set(where, (byArea.get(where) ?? 0) + delta);
  const fn = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + delta);
});

function print(title: string, table: Map<string, number>): void {
  process.stdout.write(`\n${title}\n`);
  [...table.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .forEach(([key, us]) => {
      const pct = ((100 * us) / total).toFixed(1).padStart(5);
      process.stdout.write(`${pct}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${key}\n`);
    });
}

process.stdout.write(`total sampled: ${(total / 1e6).toFixed(1)} s\n`);
print('self time by package / file', byArea);
print('self time by function', byFunction);
