import type { Variable, VariableTable } from './variables.js';

/** The default as the README shows it: its `shown` text, or the fallback in backticks, or — for none. */
export function shownDefault(variable: Variable<unknown>): string {
  if (variable.shown !== undefined) return variable.shown;
  if (variable.fallback === undefined) return '—';
  return `\`${typeof variable.fallback === 'object' ? JSON.stringify(variable.fallback) : String(variable.fallback)}\``;
}

/** The README's rows: a variable with a `doc` opens one, the variables after it without one join it. */
export function configRows(variables: VariableTable): { names: string[]; shown: string[]; doc: string }[] {
  const rows: { names: string[]; shown: string[]; doc: string }[] = [];
  for (const [name, variable] of Object.entries(variables)) {
    if (variable.doc !== undefined) rows.push({ names: [], shown: [], doc: variable.doc });
    rows.at(-1)!.names.push(name);
    rows.at(-1)!.shown.push(shownDefault(variable));
  }
  return rows;
}

/** A row's defaults: one text shared by all its variables (—, "public endpoints") is shown once. */
function rowDefault(shown: string[]): string {
  const [first] = shown;
  return shown.every((text) => text === first) && !first!.startsWith('`') ? first! : shown.join(', ');
}

/** The README's configuration table of `variables`, laid out as Prettier lays out a Markdown table. */
export function configTable(variables: VariableTable): string {
  const cells = [
    ['variable', 'default', 'meaning'],
    ...configRows(variables).map((row) => [
      row.names.map((name) => `\`${name}\``).join(', '),
      rowDefault(row.shown),
      row.doc,
    ]),
  ];
  const widths = [0, 1, 2].map((column) => Math.max(3, ...cells.map((row) => row[column]!.length)));
  const line = (row: string[]) =>
    `| ${row.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  const rule = `| ${widths.map((width) => '-'.repeat(width)).join(' | ')} |`;
  return [line(cells[0]!), rule, ...cells.slice(1).map(line)].join('\n');
}

/** `markdown` with the table that follows its `## Configuration` heading replaced by `table`. */
export function withConfigTable(markdown: string, table: string): string {
  const lines = markdown.split('\n');
  const heading = lines.indexOf('## Configuration');
  const start = lines.findIndex((text, index) => index > heading && text.startsWith('| '));
  let end = start;
  while (lines[end]?.startsWith('|')) end += 1;
  if (heading < 0 || start < 0) throw new Error('README.md has no table under "## Configuration"');
  return [...lines.slice(0, start), table, ...lines.slice(end)].join('\n');
}
