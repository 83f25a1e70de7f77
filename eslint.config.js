// @ts-check
// ESLint with typescript-eslint's type-aware rules for src/, scripts/, test/ and conformance/.
// Layout is Prettier's business (.prettierrc.json); eslint-config-prettier, last, switches off every
// rule that would fight it.
import js from '@eslint/js';
import comments from '@eslint-community/eslint-plugin-eslint-comments/configs';
import prettier from 'eslint-config-prettier';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

// The architecture as rules (docs/architecture.md). Each entry is one boundary; `restrictImports`
// combines the boundaries that apply to a group of files, since a later ESLint config object
// replaces an earlier one's options for the same rule rather than adding to them.
const FEATURES = ['accounts', 'admin', 'benchmarks', 'consent', 'dashboard', 'gdpr', 'signing', 'tape', 'verifications', 'webhooks'];
const BOUNDARIES = {
  noFeatures: {
    group: FEATURES.map((feature) => `**/${feature}/**`),
    message: 'platform/ is shared plumbing and imports no feature folder; take what it needs as a parameter or move the type into platform/.',
  },
  noKnex: {
    group: ['knex'],
    message: 'Only repositories (*-repository.ts), platform/db and the job queue touch Knex; take a UnitOfWork or call a repository.',
  },
  noExpress: {
    group: ['express', 'express-*', '**/platform/http/**'],
    message: 'Domain code knows nothing of HTTP: throw a DomainError (platform/domain-error.ts); the http/ adapters and platform/http map it.',
  },
  noComputeTape: {
    group: ['**/tape/index.ts', '**/tape/compute-tape.ts'],
    importNames: ['computeTape'],
    message: "A verification's tape is computed in one place: scoreVerification in src/verifications/scoring.ts.",
  },
};
const restrictImports = (...boundaries) => ({ 'no-restricted-imports': ['error', { patterns: boundaries.map((name) => BOUNDARIES[name]) }] });
const PRODUCTION_TS = { ignores: ['**/*.test.ts'] };

export default defineConfig(
  // generated/ is written by `npm run generate` from spec/; neither is hand-written TypeScript.
  // test/third-party-client/lender-app.ts imports an SDK that exists only where its test generates it,
  // and is compiled there under `strict`.
  globalIgnores([
    'generated/',
    // The server's bundle, compiled from src/ by scripts/build.ts.
    '.build/',
    'spec/',
    'conformance/dist/',
    'clients/typescript/dist/',
    // The typed client's copy of generated/api.ts, written by `npm run generate` with it.
    'clients/typescript/src/api.ts',
    'conformance/spec/',
    'coverage/',
    'data/',
    '.tmp/',
    'test/third-party-client/lender-app.ts',
  ]),

  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },

  // This file and any other plain JavaScript: no type information.
  {
    files: ['**/*.js'],
    extends: [js.configs.recommended],
  },

  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked, comments.recommended],
    languageOptions: {
      // The files tsconfig.json includes, with that program's types.
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // `any` only where the next line says why:
      //   // eslint-disable-next-line @typescript-eslint/no-explicit-any -- reason
      '@typescript-eslint/no-explicit-any': 'error',
      '@eslint-community/eslint-comments/require-description': 'error',

      // Promises: none left floating, none handed to a caller that ignores what it returns.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',

      // A leading underscore marks a binding that is unused on purpose, e.g. a property dropped
      // with `const { omitted: _omitted, ...rest } = value`.
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],

      // Off: here `async` without `await` is the way a method keeps a Promise-returning interface
      // (knex's migration source, a test database, a provider) and turns a throw into a rejection.
      '@typescript-eslint/require-await': 'off',
    },
  },

  // The simulated Google and Stripe servers throw an HttpError (deliberately not an Error) that their
  // own request handler turns into the provider's error response.
  {
    files: ['test/simulators/*.ts'],
    rules: {
      '@typescript-eslint/only-throw-error': [
        'error',
        {
          allow: [
            { from: 'file', name: 'HttpError', path: 'test/simulators/google.ts' },
            { from: 'file', name: 'HttpError', path: 'test/simulators/stripe.ts' },
          ],
        },
      ],
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allow: [{ from: 'file', name: 'HttpError', path: 'test/simulators/stripe.ts' }] }],
    },
  },

  // Tests read JSON response bodies (supertest's `res.body` and `response.json()` are `any`) and
  // assert on them; the assertions are the type check there. `no-explicit-any` still applies.
  {
    files: ['**/*.test.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },

  // Boundaries between src/ folders (production code only; tests may reach anywhere to set up).
  { ...PRODUCTION_TS, files: ['src/**/*.ts'], rules: restrictImports('noKnex', 'noComputeTape') },
  { ...PRODUCTION_TS, files: ['src/platform/**/*.ts'], rules: restrictImports('noFeatures', 'noKnex', 'noComputeTape') },
  { ...PRODUCTION_TS, files: ['src/platform/db/**/*.ts', 'src/platform/jobs/job-queue.ts'], rules: restrictImports('noFeatures', 'noComputeTape') },
  {
    ...PRODUCTION_TS,
    files: FEATURES.map((feature) => `src/${feature}/**/*.ts`),
    ignores: [...PRODUCTION_TS.ignores, 'src/*/http/**', 'src/*/*-repository.ts', 'src/tape/**', 'src/verifications/scoring.ts'],
    rules: restrictImports('noKnex', 'noExpress', 'noComputeTape'),
  },
  { ...PRODUCTION_TS, files: ['src/*/*-repository.ts'], rules: restrictImports('noExpress', 'noComputeTape') },
  { ...PRODUCTION_TS, files: ['src/tape/**/*.ts', 'src/verifications/scoring.ts'], rules: restrictImports('noKnex', 'noExpress') },

  prettier,
);
