/** One sample of the Prometheus text exposition format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Scrape {
  /** `# TYPE` lines: metric family name → counter, gauge, histogram, ... */
  types: Map<string, string>;
  samples: Sample[];
}

const SAMPLE = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

function unescape(value: string): string {
  return value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

/** Go's ParseFloat reads the values, so NaN and Inf are case-insensitive (prom-client writes `Nan`). */
function sampleValue(text: string): number | undefined {
  if (/^nan$/i.test(text)) return NaN;
  if (/^[+-]?inf$/i.test(text)) return text.startsWith('-') ? -Infinity : Infinity;
  const value = Number(text);
  return Number.isNaN(value) ? undefined : value;
}

/** Parses the text format strictly enough that a malformed line fails the test that scraped it. */
export function parsePrometheus(text: string): Scrape {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ')) continue;
    const type = /^# TYPE (\S+) (\w+)$/.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) labels[key!] = unescape(value!);
    const value = sampleValue(match[3]!);
    if (value === undefined) throw new Error(`not a sample value: ${line}`);
    samples.push({ name: match[1]!, labels, value });
  }
  return { types, samples };
}

/** The value of the one sample named `name` whose labels include `labels`; 0 when there is none. */
export function valueOf(scrape: Scrape, name: string, labels: Record<string, string> = {}): number {
  const found = scrape.samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} samples`);
  return found[0]?.value ?? 0;
}

/** PromQL words that are neither metrics nor followed by `(` where they appear. */
const PROMQL_KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
]);

/**
 * The metric names a PromQL expression selects: what is left once strings, label matchers, ranges and grouping
 * clauses are removed, minus function and aggregation names (followed by `(`) and keywords.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = [...bare.matchAll(/(?<![\w:.])([A-Za-z_:][\w:]*)(?![\w:]|\s*\()/g)].map((m) => m[1]!);
  return [...new Set(names.filter((name) => !PROMQL_KEYWORDS.has(name)))];
}

/** The families a scrape declares (`# TYPE`), with a histogram's or summary's series names under them. */
export function exportedNames(scrape: Scrape): Set<string> {
  const names = new Set<string>();
  for (const [family, type] of scrape.types) {
    names.add(family);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(family + suffix);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(family + suffix);
  }
  return names;
}
