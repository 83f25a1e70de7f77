// The quick tier (`npm run test:quick`) is every test file but those FULL_ONLY of .mocharc.cjs lists.
// A list drifts: these tests hold it to the files, and the helpers refuse what a quick test must not do.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, posix } from 'node:path';
import { refuseInQuickTier } from './support/tiers.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const { FULL_ONLY } = createRequire(import.meta.url)('../.mocharc.cjs') as { FULL_ONLY: string[] };

const TEST_FILES = ['src', 'scripts', 'test', 'conformance'].flatMap((dir) =>
  readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.test.ts') && !entry.parentPath.includes('node_modules'))
    .map((entry) => posix.join(posix.relative(ROOT, entry.parentPath), entry.name)),
);

/** Whether `file` is one FULL_ONLY's `pattern` names: a path, or `<folder>/**\/*.test.ts`. */
const matches = (pattern: string, file: string) =>
  pattern.endsWith('/**/*.test.ts') ? file.startsWith(pattern.slice(0, -'**/*.test.ts'.length)) : file === pattern;
const fullOnly = (file: string) => FULL_ONLY.some((pattern) => matches(pattern, file));

/** What makes a test full-tier only, as its source shows it. */
const NEEDS_FULL_TIER = /\b(serverProcessArgs|startServerProcess|checkoutForNpmStart|serverBundles|runAdmin)\b|from 'playwright-core'|\('npm'/;

describe('test tiers', () => {
  it('every FULL_ONLY entry of .mocharc.cjs names a test file', () => {
    assert.deepEqual(
      FULL_ONLY.filter((pattern) => !TEST_FILES.some((file) => matches(pattern, file))),
      [],
    );
  });

  it('every test file that starts a server process, a browser, the operator CLI or npm is FULL_ONLY', () => {
    assert.ok(TEST_FILES.length > 90, `only ${TEST_FILES.length} test files found`);
    const unlisted = TEST_FILES.filter(
      (file) => file !== 'test/tiers.test.ts' && NEEDS_FULL_TIER.test(readFileSync(join(ROOT, file), 'utf8')) && !fullOnly(file),
    );
    assert.deepEqual(unlisted, []);
    assert.ok(existsSync(join(ROOT, 'src/server.test.ts')) && fullOnly('src/server.test.ts'));
  });

  it('in the quick tier, what starts a server process, a browser or PostgreSQL is refused', () => {
    const tier = process.env.TEST_TIER;
    try {
      process.env.TEST_TIER = 'quick';
      assert.throws(() => refuseInQuickTier('starts a server process'), /FULL_ONLY of \.mocharc\.cjs/);
      delete process.env.TEST_TIER;
      assert.doesNotThrow(() => refuseInQuickTier('starts a server process'));
    } finally {
      if (tier === undefined) delete process.env.TEST_TIER;
      else process.env.TEST_TIER = tier;
    }
  });
});
