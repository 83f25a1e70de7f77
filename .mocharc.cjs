// `npx mocha path/to/some.test.ts` runs that file alone; `mocha` with no file (as `npm test` calls it)
// runs every test. Mocha adds files named on its command line to a configured `spec` rather than
// replacing it, so the full list is given only when none is named.
const ALL = ['src/**/*.test.ts', 'scripts/**/*.test.ts', 'test/**/*.test.ts', 'conformance/**/*.test.ts'];
const named = process.argv.slice(2).some((arg) => !arg.startsWith('-') && /\.test\.ts$/.test(arg));

module.exports = {
  'node-option': ['import=tsx'],
  extension: ['ts'],
  spec: named ? [] : ALL,
  timeout: 20000,
  recursive: true,
};
