/** Import cycles between files, type-only imports included: `npm run lint` fails on any. */
export default {
  files: ['src/**/*.ts', 'worker/**/*.ts', 'scripts/**/*.ts'],
  exitCode: 'circular:1',
  tree: false,
  warning: false,
  progress: false,
};
