/**
 * `npm run conformance:repeat -- [--runs N] [--out DIR] [suite options]`: runs the whole conformance
 * suite N times in a row (default 10) and reports every test whose outcome was not the same in every
 * run (passed in some, failed or skipped in others, or missing from some). Exit status 0 only when
 * no test is flaky and none failed.
 *
 * Each run is a fresh `conformance/cli.ts` process: without --base-url it starts its own service on a
 * fresh SQLite file (TEST_POSTGRES_URL is dropped from its environment, so a run is one target; pass
 * --with-postgres to keep it), with --base-url it tests that deployment again. Options other than
 * --runs, --out and --with-postgres go to the suite unchanged (e.g. --base-url, --key, --grep).
 * Outcomes are read from each run's JUnit file, the suite's own report, so what is compared is what a
 * CI system would see.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(ROOT, 'conformance', 'cli.ts');

type Outcome = 'passed' | 'failed' | 'skipped';

interface Arguments {
  runs: number;
  out: string;
  withPostgres: boolean;
  suite: string[];
}

function parseArguments(argv: string[]): Arguments {
  const suite: string[] = [];
  let runs = 10;
  let out: string | undefined;
  let withPostgres = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const next = argv[++i];
      if (next === undefined) throw new Error(`${arg} needs a value`);
      return next;
    };
    if (arg === '--runs') {
      const raw = value();
      if (!/^[1-9]\d*$/.test(raw)) throw new Error(`--runs must be a positive whole number, not "${raw}"`);
      runs = Number(raw);
    } else if (arg === '--out') out = value();
    else if (arg === '--with-postgres') withPostgres = true;
    else if (arg === '--junit' || arg === '--matrix') throw new Error(`${arg} is set per run by this script (see --out)`);
    else if (arg === '--help' || arg === '-h') {
      console.log(
        'Usage: npm run conformance:repeat -- [--runs N (default 10)] [--out DIR] [--with-postgres] [conformance options, e.g. --base-url URL --key KEY --grep PATTERN]',
      );
      process.exit(0);
    } else suite.push(arg);
  }
  return { runs, out: out ?? mkdtempSync(join(tmpdir(), 'conformance-repeat-')), withPostgres, suite };
}

/** One run of the suite, its console output to `<out>/run-<n>.log`; resolves with its exit status. */
function runSuite(n: number, args: Arguments): Promise<{ code: number; junit: string; log: string; seconds: number }> {
  const junit = join(args.out, `run-${n}.xml`);
  const log = join(args.out, `run-${n}.log`);
  const env = { ...process.env };
  if (!args.withPostgres) delete env.TEST_POSTGRES_URL;
  const started = Date.now();
  return new Promise((resolvePromise, reject) => {
    const output = createWriteStream(log);
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, '--junit', junit, ...args.suite], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(output, { end: false });
    child.stderr.pipe(output, { end: false });
    child.once('error', reject);
    child.once('close', (code, signal) => {
      output.end();
      resolvePromise({ code: code ?? (signal ? 128 : 1), junit, log, seconds: (Date.now() - started) / 1000 });
    });
  });
}

const unescapeXml = (text: string) =>
  text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');

/** Test id (suite › name) → outcome, from a JUnit file the suite's reporter wrote. */
export function outcomesOf(xml: string): Map<string, Outcome> {
  const outcomes = new Map<string, Outcome>();
  const testcase = /<testcase classname="([^"]*)" name="([^"]*)" time="[^"]*"(\/>|>\s*<(skipped|failure)\b)/g;
  for (const match of xml.matchAll(testcase)) {
    const id = `${unescapeXml(match[1]!)} › ${unescapeXml(match[2]!)}`;
    const outcome: Outcome = match[3] === '/>' ? 'passed' : match[4] === 'skipped' ? 'skipped' : 'failed';
    // A test named twice (it should not be) counts as failed if either failed.
    if (outcomes.get(id) !== 'failed') outcomes.set(id, outcome);
  }
  return outcomes;
}

async function main(): Promise<number> {
  const args = parseArguments(process.argv.slice(2));
  mkdirSync(args.out, { recursive: true });
  console.log(`conformance:repeat: ${args.runs} runs, reports and logs in ${args.out}`);
  const runs: Array<Map<string, Outcome>> = [];
  for (let n = 1; n <= args.runs; n++) {
    const result = await runSuite(n, args);
    if (!existsSync(result.junit)) {
      console.error(`run ${n}: exit ${result.code} without a JUnit file; its output is in ${result.log}`);
      return 2;
    }
    const outcomes = outcomesOf(readFileSync(result.junit, 'utf8'));
    runs.push(outcomes);
    const count = (outcome: Outcome) => [...outcomes.values()].filter((o) => o === outcome).length;
    console.log(
      `run ${n}/${args.runs}: ${count('passed')} passed, ${count('failed')} failed, ${count('skipped')} skipped in ${result.seconds.toFixed(0)} s (exit ${result.code})`,
    );
  }

  const ids = [...new Set(runs.flatMap((outcomes) => [...outcomes.keys()]))].sort();
  const flaky: string[] = [];
  const failing: string[] = [];
  for (const id of ids) {
    const seen = runs.map((outcomes) => outcomes.get(id) ?? 'missing');
    const distinct = new Set(seen);
    const history = seen.map((outcome) => ({ passed: 'P', failed: 'F', skipped: 'S', missing: '-' })[outcome]).join('');
    if (distinct.size > 1) flaky.push(`${history}  ${id}`);
    else if (distinct.has('failed')) failing.push(`${history}  ${id}`);
  }
  console.log(`\n${ids.length} tests over ${args.runs} runs (P passed, F failed, S skipped, - not in that run):`);
  console.log(`flaky (outcome differs between runs): ${flaky.length}${flaky.map((line) => `\n  ${line}`).join('')}`);
  console.log(`failed in every run: ${failing.length}${failing.map((line) => `\n  ${line}`).join('')}`);
  return flaky.length > 0 || failing.length > 0 ? 1 : 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : String(error));
      process.exitCode = 2;
    },
  );
}
