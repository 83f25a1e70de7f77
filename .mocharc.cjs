// `npx mocha path/to/some.test.ts` runs that file alone; `mocha` with no file (as `npm test` calls it)
// runs every test. Mocha adds files named on its command line to a configured `spec` rather than
// replacing it, so the full list is given only when none is named.
//
// TEST_TIER=quick (`npm run test:quick`) leaves out FULL_ONLY: the files whose tests start a server
// process, a browser or other programs, need PostgreSQL, or take more than about ten seconds
// (docs/development.md, "Test tiers"). In the quick run the helpers refuse to start a server process,
// a browser or PostgreSQL (test/support/tiers.ts), so a test that does and is not listed here fails
// there; test/tiers.test.ts checks that every entry names a file and that no unlisted test file
// starts a server process, a browser, the operator CLI or npm.
const ALL = ['src/**/*.test.ts', 'scripts/**/*.test.ts', 'test/**/*.test.ts', 'conformance/**/*.test.ts'];
const FULL_ONLY = [
  // The black-box suite and its runners start the service as its own process.
  'conformance/**/*.test.ts',
  'scripts/conformance-mutants.test.ts',
  'scripts/conformance-prism.test.ts',
  // Headless Chromium.
  'test/browser/**/*.test.ts',
  // Server processes, killed, stopped or loaded.
  'test/chaos/**/*.test.ts',
  'src/server.test.ts',
  'src/webhooks/delivery-reliability.test.ts',
  'test/conformance-package.test.ts',
  'test/erasure-crash.test.ts',
  'test/metrics.test.ts',
  'test/third-party-client.test.ts',
  'test/tracing.test.ts',
  'test/web-concurrency.test.ts',
  // Other programs: the operator CLI as its own process, npm packing and installing the client.
  'test/erasure-compact.test.ts',
  'test/operator-cli.test.ts',
  'test/typescript-client.test.ts',
  // Long: thousands of requests of fast-check over every operation of the contract; the dashboard's
  // sign-ins, each a scrypt run.
  'test/fuzz.test.ts',
  'src/dashboard/dashboard.test.ts',
  // Long: deliveries waiting out real receiver timeouts; the providers' consent through their simulators.
  'src/webhooks/delivery-worker.test.ts',
  'test/provider-consent.test.ts',
];
const quick = process.env.TEST_TIER === 'quick';
// The quick tier runs its files in worker processes, one per core and at least two: its files start
// no server process and share nothing but the CPU, and serially they left one of the two cores of the
// development machine to the type check alone (docs/development.md, "Test tiers").
const jobs = Math.max(2, require('node:os').availableParallelism());
// The quick tier needs no PostgreSQL: the suites that run on both databases run on SQLite alone.
if (quick) delete process.env.TEST_POSTGRES_URL;
const named = process.argv.slice(2).some((arg) => !arg.startsWith('-') && /\.test\.ts$/.test(arg));

module.exports = {
  'node-option': ['import=tsx'],
  extension: ['ts'],
  spec: named ? [] : ALL,
  ...(quick && { ignore: FULL_ONLY, require: ['test/support/quick-tier.ts'], parallel: true, jobs }),
  timeout: 20000,
  recursive: true,
};
// Not an option of mocha's: read by test/tiers.test.ts.
Object.defineProperty(module.exports, 'FULL_ONLY', { value: FULL_ONLY, enumerable: false });
