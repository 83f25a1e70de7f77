import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the suite finds what it reads at run time, whether it runs from the repository's source
 * (`conformance/*.ts`, spec/ one level up) or from its installed package (`dist/*.js`, with the
 * `spec/` and `scripts/make-test-ca.sh` that `npm pack` copied into the package root). Each is found
 * by walking up from this file, nearest first, so an installed package always uses the spec it was
 * packed with.
 */

const HERE = dirname(fileURLToPath(import.meta.url));

function findUp(relative: string): string | undefined {
  for (let dir = HERE; ; dir = dirname(dir)) {
    if (existsSync(join(dir, relative))) return join(dir, relative);
    if (dirname(dir) === dir) return undefined;
  }
}

function required(relative: string, what: string): string {
  const found = findUp(relative);
  if (!found) throw new Error(`The conformance suite cannot find ${what} (${relative}) above ${HERE}; the package is incomplete.`);
  return found;
}

/** The published contract the suite tests against: `spec/` with openapi.yaml, asyncapi.yaml, schemas and examples. */
export const SPEC_DIR = dirname(required('spec/openapi.yaml', 'the published contract'));

/** The script that makes the throw-away CA of the suite's webhook receiver. */
export const MAKE_TEST_CA = required('scripts/make-test-ca.sh', 'the test CA script');

/**
 * The service's repository, when the suite runs inside it: the only place it can start the service
 * itself and run the operator CLI. Undefined for an installed package.
 */
export const REPO_ROOT: string | undefined = (() => {
  const manifest = findUp('src/server.ts');
  if (!manifest) return undefined;
  const root = dirname(dirname(manifest));
  try {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name?: string };
    return pkg.name === 'creator-income-verification' ? root : undefined;
  } catch {
    return undefined;
  }
})();

export const specPath = (...parts: string[]): string => join(SPEC_DIR, ...parts);
