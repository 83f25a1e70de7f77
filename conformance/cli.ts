#!/usr/bin/env node
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import Mocha from 'mocha';
import { REPO_ROOT, SPEC_DIR } from './locate.ts';
import { buildMatrix, coverageProblems, matrixRows, rowsNamedIn, SELF_TEST } from './matrix.ts';
import { proxyRun } from './proxy-route.ts';
import { identify, suiteReporter } from './reporter.ts';

/**
 * `civ-conformance` (in the repository: `npm run conformance --`): the conformance suite in one
 * command. Every option has a CONFORMANCE_* variable it overrides, so CI scripts written for the
 * variables keep working. Without --base-url the suite starts the service itself, which only works
 * inside the service's repository.
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const OWN_EXTENSION = import.meta.url.endsWith('.ts') ? '.test.ts' : '.test.js';

/** Option → the variable the suite's harness reads. */
const VARIABLES: Record<string, string> = {
  baseUrl: 'CONFORMANCE_BASE_URL',
  key: 'CONFORMANCE_LENDER_KEY',
  otherLenderKey: 'CONFORMANCE_OTHER_LENDER_KEY',
  thirdLenderKey: 'CONFORMANCE_THIRD_LENDER_KEY',
  fourthLenderKey: 'CONFORMANCE_FOURTH_LENDER_KEY',
  gdprKey: 'CONFORMANCE_GDPR_KEY',
  revokedKey: 'CONFORMANCE_REVOKED_KEY',
  pilotKey: 'CONFORMANCE_PILOT_KEY',
  returnOrigin: 'CONFORMANCE_RETURN_ORIGIN',
  receiverHost: 'CONFORMANCE_RECEIVER_HOST',
  caDir: 'CONFORMANCE_RECEIVER_CA_DIR',
  sandboxDelayMs: 'CONFORMANCE_SANDBOX_DELAY_MS',
  retrySchedule: 'CONFORMANCE_RETRY_SCHEDULE',
  webhookTimeoutMs: 'CONFORMANCE_WEBHOOK_TIMEOUT_MS',
  privateTargetsAllowed: 'CONFORMANCE_PRIVATE_TARGETS_ALLOWED',
  directBaseUrl: 'CONFORMANCE_DIRECT_BASE_URL',
};

interface Options {
  baseUrl?: string;
  key?: string;
  junit?: string;
  matrix?: string;
  grep?: string;
  timeout: string;
  bail?: boolean;
  checkCoverage?: boolean;
  [name: string]: unknown;
}

function program(): Command {
  const variable = (name: string) => `(env ${VARIABLES[name]})`;
  return new Command('civ-conformance')
    .description(
      'Black-box conformance suite of the Creator Income Verification Service: checks a deployment against the published contract it carries (spec/ OpenAPI, AsyncAPI, JSON Schemas).',
    )
    .option(
      '--base-url <url>',
      `deployment to test, e.g. https://sandbox.creator-income.example ${variable('baseUrl')}; without it the suite starts the service itself (repository only)`,
    )
    .option(
      '--direct-base-url <url>',
      `when --base-url is a validating proxy (e.g. Stoplight Prism) in front of the deployment: the deployment itself, for the requests the proxy cannot forward as sent ${variable('directBaseUrl')}`,
    )
    .option('--key <key>', `API key with role lender; civ_test_ = sandbox, civ_live_ = production ${variable('key')}`)
    .option('--other-lender-key <key>', `lender key of another lender account: tenant isolation ${variable('otherLenderKey')}`)
    .option('--third-lender-key <key>', `lender key of a third lender account: peer benchmarks across lenders ${variable('thirdLenderKey')}`)
    .option(
      '--fourth-lender-key <key>',
      `lender key of a fourth lender account: peer cohorts at and just below the floor of three other lenders ${variable('fourthLenderKey')}`,
    )
    .option('--gdpr-key <key>', `gdpr_admin key of the same lender account as --key: data-protection operations ${variable('gdprKey')}`)
    .option('--revoked-key <key>', `a key the operator has revoked ${variable('revokedKey')}`)
    .option('--pilot-key <key>', `lender key limited to 60/min burst 10: the 429 tests use up its minute ${variable('pilotKey')}`)
    .option(
      '--return-origin <origin>',
      `an origin registered for the account of --key (lender set --return-origins): return_url tests ${variable('returnOrigin')}`,
    )
    .option('--ca-dir <dir>', `directory made by make-test-ca.sh whose ca.pem the deployment trusts; enables the webhook tests ${variable('caDir')}`)
    .option(
      '--receiver-host <host>',
      `address the suite's webhook receiver listens on and the deployment reaches it at (default 127.0.0.1) ${variable('receiverHost')}`,
    )
    .option('--sandbox-delay-ms <ms>', `the deployment's SANDBOX_COMPLETE_DELAY_MS (default 5000) ${variable('sandboxDelayMs')}`)
    .option('--retry-schedule <seconds>', `the deployment's WEBHOOK_RETRY_SCHEDULE (default 0,60,300,1800,7200) ${variable('retrySchedule')}`)
    .option('--webhook-timeout-ms <ms>', `the deployment's WEBHOOK_TIMEOUT_MS (default 10000) ${variable('webhookTimeoutMs')}`)
    .addOption(
      new Option('--private-targets-allowed <0|1>', `the deployment's WEBHOOK_ALLOW_PRIVATE_TARGETS ${variable('privateTargetsAllowed')}`).choices(['0', '1']),
    )
    .option('--junit <file>', 'write a JUnit XML report (skip reasons included)')
    .option('--matrix <file>', 'write the traceability matrix to <file>.md and <file>.json')
    .option('--grep <pattern>', 'run only the tests whose full title matches')
    .option('--timeout <ms>', 'per-test timeout', '60000')
    .option('--bail', 'stop at the first failure')
    .option('--check-coverage', 'run nothing: fail when a row of the contract has no test or a test names no row')
    .addHelpText(
      'after',
      `
Examples:
  civ-conformance --base-url https://sandbox.example --key civ_test_... --gdpr-key civ_test_... --junit out/junit.xml --matrix out/matrix
  civ-conformance --base-url https://api.example --key civ_live_... --grep 'rate limit'

Contract: ${SPEC_DIR}`,
    );
}

function testFiles(): string[] {
  return readdirSync(HERE)
    .filter((file) => file.endsWith(OWN_EXTENSION))
    .sort()
    .map((file) => join(HERE, file));
}

function describeRun(options: Options): string {
  const env = process.env;
  const key = env.CONFORMANCE_LENDER_KEY ?? '';
  const lines = [
    `Target: ${env.CONFORMANCE_BASE_URL ?? 'self-started service from the repository (SQLite, and PostgreSQL with TEST_POSTGRES_URL)'}`,
    `Mode: ${env.CONFORMANCE_BASE_URL ? (key.startsWith('civ_live_') ? 'production (civ_live_ key): sandbox-only tests skipped' : 'sandbox (civ_test_ key)') : 'sandbox'}`,
    `Operator CLI: ${env.CONFORMANCE_BASE_URL ? 'not reachable (external deployment): tests that need the operator skipped' : 'yes (self-started)'}`,
    `Webhooks: ${env.CONFORMANCE_BASE_URL ? (env.CONFORMANCE_RECEIVER_CA_DIR ? `receiver on ${env.CONFORMANCE_RECEIVER_HOST || '127.0.0.1'}, CA ${env.CONFORMANCE_RECEIVER_CA_DIR}; probed by one delivery before the tests` : 'no --ca-dir: delivery tests skipped') : 'own CA and receiver; probed by one delivery before the tests'}`,
    `Keys: ${
      !env.CONFORMANCE_BASE_URL
        ? 'made with the operator CLI'
        : [
            'CONFORMANCE_OTHER_LENDER_KEY',
            'CONFORMANCE_THIRD_LENDER_KEY',
            'CONFORMANCE_FOURTH_LENDER_KEY',
            'CONFORMANCE_GDPR_KEY',
            'CONFORMANCE_REVOKED_KEY',
            'CONFORMANCE_PILOT_KEY',
          ]
            .map((name) => `${name.replace(/^CONFORMANCE_|_KEY$/g, '').toLowerCase()} ${env[name] ? 'given' : 'missing'}`)
            .join(', ')
    }`,
    ...(env.CONFORMANCE_BASE_URL && env.CONFORMANCE_DIRECT_BASE_URL
      ? [`Proxy: ${env.CONFORMANCE_BASE_URL} is a proxy in front of ${env.CONFORMANCE_DIRECT_BASE_URL}; requests it cannot forward as sent go there directly`]
      : []),
    `Contract: ${SPEC_DIR}${options.grep ? `\nGrep: ${options.grep}` : ''}`,
  ];
  return lines.join('\n');
}

async function main(argv: string[]): Promise<number> {
  const options = program().parse(argv).opts<Options>();
  for (const [name, variable] of Object.entries(VARIABLES)) {
    const value = options[name];
    if (typeof value === 'string') process.env[variable] = value;
  }
  if (!process.env.CONFORMANCE_BASE_URL && !REPO_ROOT && !options.checkCoverage) {
    console.error('civ-conformance: --base-url is required. Starting the service itself (no --base-url) works only inside the service repository.');
    return 2;
  }
  if (process.env.CONFORMANCE_BASE_URL && !process.env.CONFORMANCE_LENDER_KEY) {
    console.error('civ-conformance: --key (a key with the lender role) is required with --base-url.');
    return 2;
  }

  const rows = await matrixRows();
  if (options.checkCoverage) return checkCoverage(rows);

  const run = describeRun(options);
  console.log(run);
  const mocha = new Mocha({
    timeout: Number(options.timeout),
    ...(options.grep ? { grep: options.grep } : {}),
    ...(options.bail ? { bail: true } : {}),
    reporter: suiteReporter({ junit: options.junit, matrix: options.matrix, rows, describeRun: () => run }),
  });
  for (const file of testFiles()) mocha.addFile(file);
  await mocha.loadFilesAsync();
  const failures = await new Promise<number>((resolve) => mocha.run(resolve).on('test', (test) => (proxyRun.currentTest = test.fullTitle())));
  if (process.env.CONFORMANCE_BASE_URL && process.env.CONFORMANCE_DIRECT_BASE_URL) printBypasses();
  return failures > 0 ? 1 : 0;
}

/** Which tests sent requests around the proxy, and why. */
function printBypasses(): void {
  const tests = new Map<string, Set<string>>();
  for (const { test, request, reason } of proxyRun.bypasses) {
    const lines = tests.get(test) ?? new Set<string>();
    lines.add(`${request}: ${reason}`);
    tests.set(test, lines);
  }
  console.log(`\nAround the proxy: ${proxyRun.bypasses.length} requests of ${tests.size} tests went to the deployment directly.`);
  for (const [test, lines] of tests) console.log(`  ${test}\n${[...lines].map((line) => `    ${line}`).join('\n')}`);
}

/** Loads the tests without running any, and checks every row has a test and every test names a row. */
async function checkCoverage(rows: Awaited<ReturnType<typeof matrixRows>>): Promise<number> {
  const mocha = new Mocha({ dryRun: true });
  for (const file of testFiles()) mocha.addFile(file);
  await mocha.loadFilesAsync();
  const declared = new Map<string, { id: string; rows: string[]; selfTest: boolean }>();
  const visit = (suite: Mocha.Suite) => {
    for (const test of suite.tests) {
      const { id } = identify(test);
      declared.set(id, { id, rows: rowsNamedIn(test.fullTitle()), selfTest: test.fullTitle().includes(SELF_TEST) });
    }
    suite.suites.forEach(visit);
  };
  visit(mocha.suite);
  const tests = [...declared.values()];
  const matrix = buildMatrix(rows, [], tests);
  const problems = coverageProblems(matrix);
  if (problems.length === 0) {
    const testable = matrix.rows.filter((entry) => !entry.notTestable);
    console.log(`Coverage: ${rows.length} rows of the contract, ${tests.length} tests; every row has a test and every test names a row.`);
    console.log(
      `Depth: ${testable.filter((entry) => entry.mutants.length > 0).length} of ${testable.length} testable rows have planted defects their tests kill.`,
    );
    return 0;
  }
  console.error(`Coverage: ${problems.length} problems (${rows.length} rows, ${tests.length} tests):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  return 1;
}

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exitCode = 2;
  },
);
