import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import Mocha from 'mocha';
import { buildMatrix, matrixMarkdown, rowsNamedIn, SELF_TEST, withoutTags, type MatrixRow, type Outcome, type TestRecord } from './matrix.ts';
import { skipReasonOf } from './skip.ts';

/**
 * The suite's reporter: mocha's `spec` output on the console, and at the end the files asked for,
 * a JUnit XML file and the traceability matrix (Markdown and JSON). The JUnit file is written here
 * rather than by mocha's `xunit` reporter because that one writes `<skipped/>` without the reason,
 * and a skipped conformance test must say why.
 */

export interface ReportOptions {
  junit?: string | undefined;
  /** Base name: writes `<matrix>.md` and `<matrix>.json`. */
  matrix?: string | undefined;
  rows: MatrixRow[];
  /** The deployment and what the run detected about it, printed at the top of the files. */
  describeRun: () => string;
}

const TARGET_SUITE = /^conformance on (.+)$/;

interface JunitCase {
  suite: string;
  name: string;
  outcome: Outcome;
  seconds: number;
  skipReason?: string | undefined;
  error?: { message: string; type: string; stack: string } | undefined;
}

export function suiteReporter(report: ReportOptions): new (runner: Mocha.Runner, options: Mocha.MochaOptions) => Mocha.reporters.Base {
  return class SuiteReporter extends Mocha.reporters.Spec {
    constructor(runner: Mocha.Runner, options: Mocha.MochaOptions) {
      super(runner, options);
      const records: TestRecord[] = [];
      const cases: JunitCase[] = [];
      const record = (test: Mocha.Test, outcome: Outcome, error?: Error) => {
        const { target, id } = identify(test);
        const skipReason = outcome === 'skipped' ? (skipReasonOf(test) ?? 'skipped by the test without a reason') : undefined;
        records.push({
          id,
          target,
          outcome,
          rows: rowsNamedIn(test.fullTitle()),
          selfTest: test.fullTitle().includes(SELF_TEST),
          ...(skipReason ? { skipReason } : {}),
          ...(error ? { error: error.message } : {}),
          durationMs: test.duration ?? 0,
        });
        cases.push({
          suite: test.parent?.fullTitle() ?? '',
          name: stripSkip(test),
          outcome,
          seconds: (test.duration ?? 0) / 1000,
          skipReason,
          error: error ? { message: error.message, type: error.name, stack: error.stack ?? String(error) } : undefined,
        });
      };
      runner.on(Mocha.Runner.constants.EVENT_TEST_PASS, (test) => record(test, 'passed'));
      runner.on(Mocha.Runner.constants.EVENT_TEST_FAIL, (test, error: Error) => {
        // A failing hook is reported as a failed "hook" runnable; it fails the tests it stood for.
        if (test.type === 'test') record(test, 'failed', error);
        else
          cases.push({
            suite: test.parent?.fullTitle() ?? '',
            name: test.title,
            outcome: 'failed',
            seconds: 0,
            error: { message: error.message, type: error.name, stack: error.stack ?? String(error) },
          });
      });
      runner.on(Mocha.Runner.constants.EVENT_TEST_PENDING, (test) => record(test, 'skipped'));
      runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
        if (report.junit) write(report.junit, junitXml(cases, report.describeRun()));
        if (report.matrix) {
          const matrix = buildMatrix(report.rows, records);
          write(`${report.matrix}.json`, `${JSON.stringify({ run: report.describeRun(), ...matrix, tests: records }, null, 2)}\n`);
          write(`${report.matrix}.md`, `${matrixMarkdown(matrix, 'Conformance traceability matrix')}\n${report.describeRun()}\n`);
        }
      });
    }
  };
}

function write(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
}

/** Where a test ran and what it is, the same on every target: its full title without target, tags or skip reason. */
export function identify(test: Mocha.Runnable): { target: string; id: string } {
  const titles = test.titlePath();
  const first = titles[0] ?? '';
  const targetMatch = TARGET_SUITE.exec(first);
  const target = targetMatch ? targetMatch[1]! : '';
  const rest = targetMatch ? titles.slice(1) : titles;
  rest[rest.length - 1] = stripSkip(test);
  return { target, id: withoutTags(rest.join(' ')) };
}

function stripSkip(test: Mocha.Runnable): string {
  const reason = skipReasonOf(test);
  const suffix = reason ? ` (skipped: ${reason})` : '';
  return suffix && test.title.endsWith(suffix) ? test.title.slice(0, -suffix.length) : test.title;
}

const xml = (text: string) =>
  text
    // eslint-disable-next-line no-control-regex -- characters XML 1.0 cannot carry at all
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');

function junitXml(cases: JunitCase[], run: string): string {
  const suites = new Map<string, JunitCase[]>();
  for (const c of cases) (suites.get(c.suite) ?? suites.set(c.suite, []).get(c.suite)!).push(c);
  const count = (list: JunitCase[], outcome: Outcome) => list.filter((c) => c.outcome === outcome).length;
  const time = (list: JunitCase[]) => list.reduce((sum, c) => sum + c.seconds, 0).toFixed(3);
  const lines = ['<?xml version="1.0" encoding="UTF-8"?>'];
  lines.push(
    `<testsuites name="conformance" tests="${cases.length}" failures="${count(cases, 'failed')}" skipped="${count(cases, 'skipped')}" time="${time(cases)}">`,
  );
  for (const [name, list] of suites) {
    lines.push(
      `  <testsuite name="${xml(name)}" tests="${list.length}" failures="${count(list, 'failed')}" errors="0" skipped="${count(list, 'skipped')}" time="${time(list)}">`,
    );
    for (const c of list) {
      const open = `    <testcase classname="${xml(c.suite)}" name="${xml(c.name)}" time="${c.seconds.toFixed(3)}"`;
      if (c.outcome === 'passed') lines.push(`${open}/>`);
      else if (c.outcome === 'skipped') lines.push(`${open}>`, `      <skipped message="${xml(c.skipReason ?? '')}"/>`, '    </testcase>');
      else
        lines.push(
          `${open}>`,
          `      <failure message="${xml(c.error?.message ?? '')}" type="${xml(c.error?.type ?? 'Error')}">${xml(c.error?.stack ?? '')}</failure>`,
          '    </testcase>',
        );
    }
    lines.push('  </testsuite>');
  }
  lines.push(`  <!-- ${xml(run).replace(/--/g, '- -')} -->`, '</testsuites>', '');
  return lines.join('\n');
}
