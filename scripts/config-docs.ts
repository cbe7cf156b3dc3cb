import { readFileSync, writeFileSync } from 'node:fs';
import { configTable, withConfigTable } from '../src/core/config/docs.js';

/** Rewrites the README's configuration table from src/core/config/variables.ts. */
const file = new URL('../README.md', import.meta.url);
writeFileSync(file, withConfigTable(readFileSync(file, 'utf8'), configTable()));
