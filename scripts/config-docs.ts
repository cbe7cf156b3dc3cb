import { readFileSync, writeFileSync } from 'node:fs';
import { VARIABLES } from '../src/config.js';
import { configTable, withConfigTable } from '../src/core/config/docs.js';

/** Rewrites the README's configuration table from the variables src/config.ts composes. */
const file = new URL('../README.md', import.meta.url);
writeFileSync(file, withConfigTable(readFileSync(file, 'utf8'), configTable(VARIABLES)));
