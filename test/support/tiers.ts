// The two tiers of tests (docs/development.md, "Test tiers"): `npm test` runs every test file, and
// `npm run test:quick` (TEST_TIER=quick) those not listed in FULL_ONLY of .mocharc.cjs. A quick test
// starts no server process, browser or PostgreSQL connection; the helpers that start one ask here
// first, so a test that does so and is not listed fails in the quick run instead of slowing it.

export function refuseInQuickTier(what: string): void {
  if (process.env.TEST_TIER !== 'quick') return;
  throw new Error(`This test ${what}, which the quick tier never does: list its file in FULL_ONLY of .mocharc.cjs (docs/development.md, "Test tiers").`);
}
