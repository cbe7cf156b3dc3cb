import {
  nativeVerifier,
  nodeCryptoVerifier,
  type SignatureVerifier,
  type VerifierPath,
} from '../../src/identity/signature.js';

export const VERIFIER_PATHS: readonly VerifierPath[] = ['libsecp256k1', 'node:crypto'];

/** Set to `1` only on a machine without a compiler (nor a prebuilt binding): the libsecp256k1 tests then skip. */
const NO_COMPILER = process.env.TEST_NO_COMPILER === '1';

const native = (() => {
  try {
    return nativeVerifier();
  } catch (err) {
    return String((err as Error).message).split('\n')[0]!;
  }
})();

/**
 * The verifier of `path`, for a `before` hook. The binding package.json installs must load where tests run (it
 * builds on every machine with a compiler): its absence fails the hook, unless TEST_NO_COMPILER=1 says why.
 */
export function verifierFor(path: VerifierPath, context: Mocha.Context): SignatureVerifier {
  if (path === 'node:crypto') return nodeCryptoVerifier;
  if (typeof native !== 'string') return native;
  if (!NO_COMPILER) {
    throw new Error(
      `the libsecp256k1 binding did not load (${native}); run npm ci where a compiler is present, ` +
        'or set TEST_NO_COMPILER=1 on a machine without one',
    );
  }
  process.stderr.write(
    `  libsecp256k1 path NOT tested: the binding did not load (${native}); TEST_NO_COMPILER=1\n`,
  );
  return context.skip();
}
