import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const FEATURES = [
  'identity',
  'mailbox',
  'pairing',
  'push',
  'realtime',
  'market',
  'support',
  'partners',
  'contract',
];
/** How deep under src/ a file may sit for the boundary checks below (src/core/http/body.ts is 2). */
const DEPTHS = [1, 2, 3, 4];
/** The relative-import prefix that climbs from a file `depth` folders below src/ back up to src/. */
const toSrc = (depth) => `^(\\.\\./){${depth}}`;
/** A files glob for the files exactly `depth` folders below src/<folder>/. */
const filesAt = (folder, depth) => `src/${folder}/${'*/'.repeat(depth - 1)}*.ts`;
const restrict = (files, patterns) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns }] },
});

/** Units the features share, a layer above core and below every feature: they import only core. */
const SHARED = ['action-types'];

const CORE_ALONE = 'src/core/ imports nothing outside src/core/.';
const THROUGH_INDEX = "A feature is imported only through its index.ts ('<feature>/index.js').";

/** Boundaries between core, the features and their users; type-only imports count too. */
const boundaries = [
  ...DEPTHS.map((depth) =>
    restrict([filesAt('core', depth)], [{ regex: toSrc(depth), message: CORE_ALONE }]),
  ),
  ...SHARED.flatMap((unit) =>
    DEPTHS.map((depth) =>
      restrict(
        [filesAt(unit, depth)],
        [{ regex: `${toSrc(depth)}(?!core/)`, message: `src/${unit}/ imports only src/core/.` }],
      ),
    ),
  ),
  ...FEATURES.flatMap((feature) =>
    DEPTHS.map((depth) =>
      restrict(
        [filesAt(feature, depth)],
        [{ regex: `${toSrc(depth)}(?!core/|${feature}/)[^/]+/(?!index\\.js$)`, message: THROUGH_INDEX }],
      ),
    ),
  ),
  restrict(
    ['worker/*.ts', 'scripts/*.ts'],
    [{ regex: '^\\.\\./src/(?!core/)[^/]+/(?!index\\.js$)', message: THROUGH_INDEX }],
  ),
  // A feature's variables.ts too: src/config.ts reads the variables without loading the features.
  restrict(
    ['src/*.ts'],
    [{ regex: '^\\./(?!core/)[^/]+/(?!index\\.js$|variables\\.js$)', message: THROUGH_INDEX }],
  ),
];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'client/dist/', '.bench/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
      'no-duplicate-imports': 'error',
    },
  },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['dpdm.config.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  ...boundaries,
);
