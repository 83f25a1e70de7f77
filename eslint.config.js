// @ts-check
// ESLint with typescript-eslint's type-aware rules for src/, scripts/, test/ and conformance/.
// Layout is Prettier's business (.prettierrc.json); eslint-config-prettier, last, switches off every
// rule that would fight it.
import js from '@eslint/js';
import comments from '@eslint-community/eslint-plugin-eslint-comments/configs';
import prettier from 'eslint-config-prettier';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  // generated/ is written by `npm run generate` from spec/; neither is hand-written TypeScript.
  globalIgnores(['generated/', 'spec/', 'coverage/', 'data/', '.tmp/']),

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

  prettier,
);
