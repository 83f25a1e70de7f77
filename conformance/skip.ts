/**
 * Skipping with a reason. Mocha has no skip reasons of its own, so the reason is kept on the test
 * (read by the suite's reporter for the JUnit file and the matrix) and shown after its title on the
 * console. Every skip in the suite goes through here: a QA engineer must see why a test did not run.
 */

export const SKIP_REASON = Symbol.for('civ.conformance.skipReason');

type WithReason = Mocha.Runnable & { [SKIP_REASON]?: string };

export function skipBecause(context: Mocha.Context, reason: string): never {
  const hook = (context.test as { type?: string } | undefined)?.type === 'hook' ? context.test : undefined;
  if (hook?.parent && /"before all"/.test(hook.title)) {
    // A `before` hook that skips skips every test of its suite, which mocha marks pending without
    // running them (its currentTest is only the first of them): each of them gets the reason.
    for (const test of testsUnder(hook.parent)) giveReason(test, reason);
  } else {
    const test: WithReason | undefined = context.currentTest ?? context.test;
    if (test) giveReason(test, reason);
  }
  context.skip();
}

function giveReason(test: WithReason, reason: string): void {
  if (test[SKIP_REASON] !== undefined) return;
  test[SKIP_REASON] = reason;
  test.title += ` (skipped: ${reason})`;
}

function testsUnder(suite: Mocha.Suite): Mocha.Test[] {
  return [...suite.tests, ...suite.suites.flatMap(testsUnder)];
}

/** The reason a test was skipped for, and its title without it. */
export function skipReasonOf(test: Mocha.Runnable): string | undefined {
  return (test as WithReason)[SKIP_REASON];
}
