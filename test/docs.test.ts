// The README and docs/ are read by integrators as the contract's companion: the names they print
// must be names the contract has, and the commands they print must run as written.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import '../src/service.ts';
import { hotStatementsMade } from '../src/platform/db/hot-statements.ts';
import { namedStatementsMade } from '../src/platform/db/named-statements.ts';
import { ERASED_WITH_THE_CREATOR, KEPT_APART_AFTER_ERASURE, NO_CREATOR_DATA } from '../src/gdpr/personal-data.ts';
import { policyKeys } from '../src/tape/eligibility/policy.ts';
import { PRODUCT_TYPES } from '../src/tape/income.ts';
import { ROOT } from './support/tape.ts';

const filesUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });

const DOCS = [join(ROOT, 'README.md'), ...filesUnder(join(ROOT, 'docs')).filter((path) => path.endsWith('.md'))];

/** Every word of spec/: property, parameter and enum names, and what the descriptions say. */
const SPEC_WORDS = new Set(filesUnder(join(ROOT, 'spec')).flatMap((path) => readFileSync(path, 'utf8').match(/[A-Za-z0-9_]+/g) ?? []));

/** The database's tables and columns (personal-data.ts lists every one; a test holds it to the schema). */
const DATABASE_NAMES = new Set([
  ...Object.entries(ERASED_WITH_THE_CREATOR).flatMap(([table, { columns }]) => [table, ...columns]),
  ...Object.entries(KEPT_APART_AFTER_ERASURE).flatMap(([table, { columns }]) => [table, ...columns]),
  ...Object.entries(NO_CREATOR_DATA).flatMap(([table, columns]) => [table, ...columns]),
]);

/** The names of the prepared statements (docs/persistence.md lists them; a test holds it to the code). */
const STATEMENT_NAMES = new Set([...hotStatementsMade.keys(), ...namedStatementsMade.keys()]);

/** A lender's policy keys (`lender policy --set key=value`, docs/scoring.md), an operator's words. */
const POLICY_KEYS = new Set(PRODUCT_TYPES.flatMap((productType) => Object.keys(policyKeys(productType))));

/**
 * The other snake_case words the docs print that are no API field, by kind. Prometheus series
 * (`civ_`, Node's `nodejs_`) and PostgreSQL's own views, functions and tools (`pg_`) are told by
 * their prefix instead.
 */
const NOT_FIELDS = new Set([
  // Database server settings (docs/operations.md, docs/performance.md).
  'max_connections',
  'shared_buffers',
  'wal_keep_size',
  'max_wal_size',
  'journal_size_limit',
  'busy_timeout',
  // The database drivers' settings (pg's statement_timeout and query_timeout).
  'statement_timeout',
  'query_timeout',
  // Label values of the Prometheus series.
  'consent_pages',
  'first_attempt',
  // Background job kinds (`verification.collect_income`, `consent.revoke_grant`).
  'collect_income',
  'revoke_grant',
  // Log and alert fields: OpenTelemetry's ids in a log line, the runbook link of an alert.
  'trace_id',
  'span_id',
  'runbook_url',
  // The consent pages' language cookie, a Stripe balance transaction type, a kernel function in a
  // profile, npm's folder, and a symbol of a formula in docs/scoring.md.
  'consent_lang',
  'payment_refund',
  'finish_task_switch',
  'node_modules',
  'n_p',
]);

const SNAKE_CASE = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$/;

/**
 * The API field names a doc prints in backticks: a snake_case word alone (`obligor_reference`) or
 * within a dotted path (`eligibility.max_advance_eur`), never an environment variable (upper case),
 * a command or a value with spaces, dashes or `=`. A path that starts with a table is a column.
 */
function fieldNamesIn(markdown: string): string[] {
  const names: string[] = [];
  for (const [, code] of markdown.matchAll(/`([^`\n]+)`/g)) {
    if (!/^[a-z0-9_]+(?:\.[a-z0-9_]+)*$/.test(code!)) continue;
    const segments = code!.split('.');
    if (DATABASE_NAMES.has(segments[0]!) || STATEMENT_NAMES.has(segments[0]!)) continue;
    for (const segment of segments) {
      if (!SNAKE_CASE.test(segment) || DATABASE_NAMES.has(segment) || POLICY_KEYS.has(segment) || NOT_FIELDS.has(segment)) continue;
      if (/^(civ|nodejs|pg)_/.test(segment)) continue;
      names.push(segment);
    }
  }
  return names;
}

describe('the docs', () => {
  it('name only fields that exist in spec/', () => {
    const unknown: string[] = [];
    let checked = 0;
    for (const path of DOCS) {
      for (const name of fieldNamesIn(readFileSync(path, 'utf8'))) {
        checked++;
        if (!SPEC_WORDS.has(name)) unknown.push(`${relative(ROOT, path)}: ${name}`);
      }
    }
    assert.deepEqual([...new Set(unknown)], []);
    assert.ok(checked > 200, `only ${checked} field names found: the rule no longer reads the docs`);
  });

  it('finds a misspelt field, and leaves alone what is no field', () => {
    assert.deepEqual(fieldNamesIn('`declared_monthly_debt_eur` and `risk_profile.platform_hhi`'), [
      'declared_monthly_debt_eur',
      'risk_profile',
      'platform_hhi',
    ]);
    const notFields =
      '`DATABASE_URL`, `npm run admin -- lender list`, `verification_transitions`, `service_settings.deployment_mode`, `min_months_history`, `civ_jobs_queued`, `pg_dump`, `1.0.0`';
    assert.deepEqual(fieldNamesIn(notFields), []);
  });

  it('pin the version of every package they run with npx, to the version package.json pins', () => {
    const pinned = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    const commands = [...DOCS, join(ROOT, 'clients/typescript/README.md')].flatMap((path) =>
      [...readFileSync(path, 'utf8').matchAll(/^npx (\S+)/gm)].map(([, spec]) => ({ path: relative(ROOT, path), spec: spec! })),
    );
    assert.ok(
      commands.some((c) => c.path === 'clients/typescript/README.md'),
      'the client README runs a generator',
    );
    for (const { path, spec } of commands) {
      const at = spec.lastIndexOf('@');
      assert.ok(at > 0, `${path}: npx ${spec} names no version; the newest one may not run on the Node versions package.json allows`);
      const name = spec.slice(0, at);
      const version = pinned.devDependencies[name];
      assert.ok(version, `${path}: ${name} is not a devDependency, so no test runs the version it names`);
      assert.equal(spec.slice(at + 1), version, `${path}: npx ${spec}`);
    }
  });
});
