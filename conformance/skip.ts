/**
 * Skipping with a reason. Mocha has no skip reasons of its own, so the reason is kept on the test
 * (read by the suite's reporter for the JUnit file and the matrix) and shown after its title on the
 * console. Every skip in the suite goes through here: a QA engineer must see why a test did not run.
 */

export const SKIP_REASON = Symbol.for('civ.conformance.skipReason');

type WithReason = Mocha.Runnable & { [SKIP_REASON]?: string };

export function skipBecause(context: Mocha.Context, reason: string): never {
  const test: WithReason | undefined = context.currentTest ?? context.test;
  if (test) {
    test[SKIP_REASON] = reason;
    test.title += ` (skipped: ${reason})`;
  }
  context.skip();
}

/** The reason a test was skipped for, and its title without it. */
export function skipReasonOf(test: Mocha.Runnable): string | undefined {
  return (test as WithReason)[SKIP_REASON];
}
