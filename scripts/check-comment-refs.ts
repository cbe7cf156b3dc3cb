import { relative } from 'node:path';
import ts from 'typescript';

/**
 * `npm run lint`: every `Type.member` or `Type#member` a comment names, where Type is a class, interface or type
 * of this repository's, must be a member of it (static or instance, inherited or private), so a rename cannot leave
 * a stale name behind. Exits 1 naming each one that is not.
 */
const CHECKED = /^(src|worker|scripts|bench)\//;
const REFERENCE = /\b([A-Z][A-Za-z0-9_]*)[.#]([A-Za-z_$][A-Za-z0-9_$]*)/g;

const root = new URL('..', import.meta.url).pathname;
const configFile = ts.findConfigFile(root, ts.sys.fileExists, 'tsconfig.json')!;
const { config } = ts.readConfigFile(configFile, ts.sys.readFile);
const parsed = ts.parseJsonConfigFileContent(config, ts.sys, root);
const program = ts.createProgram(
  parsed.fileNames.filter((file) => CHECKED.test(relative(root, file))),
  parsed.options,
);
const checker = program.getTypeChecker();
const files = program
  .getSourceFiles()
  .filter((file) => !file.isDeclarationFile && !program.isSourceFileFromExternalLibrary(file));

/** The members of every top-level class, interface and type alias, by name (merged when a name is declared twice). */
const members = new Map<string, Set<string>>();
for (const file of files) {
  for (const statement of file.statements) {
    if (
      !ts.isClassDeclaration(statement) &&
      !ts.isInterfaceDeclaration(statement) &&
      !ts.isTypeAliasDeclaration(statement)
    )
      continue;
    if (!statement.name) continue;
    const symbol = checker.getSymbolAtLocation(statement.name);
    if (!symbol) continue;
    const names = members.get(statement.name.text) ?? new Set<string>();
    for (const property of checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(symbol)))
      names.add(property.name);
    if (ts.isClassDeclaration(statement)) {
      for (const property of checker.getPropertiesOfType(
        checker.getTypeOfSymbolAtLocation(symbol, statement),
      ))
        names.add(property.name);
    }
    members.set(statement.name.text, names);
  }
}

/** Every comment of a file, once each, with the position it starts at. */
function comments(file: ts.SourceFile): { pos: number; text: string }[] {
  const seen = new Map<number, string>();
  const collect = (ranges: ts.CommentRange[] | undefined) => {
    for (const range of ranges ?? []) seen.set(range.pos, file.text.slice(range.pos, range.end));
  };
  const visit = (node: ts.Node) => {
    collect(ts.getLeadingCommentRanges(file.text, node.getFullStart()));
    collect(ts.getTrailingCommentRanges(file.text, node.getEnd()));
    node.forEachChild(visit);
  };
  visit(file);
  collect(ts.getLeadingCommentRanges(file.text, file.endOfFileToken.getFullStart()));
  return [...seen].map(([pos, text]) => ({ pos, text }));
}

const stale: string[] = [];
for (const file of files) {
  const path = relative(root, file.fileName);
  if (!CHECKED.test(path)) continue;
  for (const { pos, text } of comments(file)) {
    for (const match of text.matchAll(REFERENCE)) {
      const [reference, type, member] = match as unknown as [string, string, string];
      const known = members.get(type);
      if (!known || known.has(member)) continue;
      const { line } = file.getLineAndCharacterOfPosition(pos + match.index);
      stale.push(`${path}:${line + 1}: ${reference} names no member of ${type}`);
    }
  }
}

if (stale.length > 0) {
  process.stderr.write(`${stale.join('\n')}\n`);
  process.exit(1);
}
