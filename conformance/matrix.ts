import { readdirSync, readFileSync } from 'node:fs';
import YAML from 'yaml';
import { loadContract, type JsonObject } from './contract.ts';
import { specPath } from './locate.ts';
import { MUTANTS_BY_ROW } from './mutant-rows.ts';

/**
 * The traceability matrix: one row per row of the contract's tables, each covered by the tests that
 * name it. Rows come from spec/ wherever it has the table in a form a program can read:
 *
 * | Kind | Row id | Read from |
 * |---|---|---|
 * | op | `op:<operationId> <status>` and, for an error status, `op:<operationId> <status> <error code>` | the responses of each operation in openapi.yaml; the codes of an error response are the `error` of its examples |
 * | transition | `transition:<from>-><to>` (`new` for creation) | `x-transitions` of VerificationStatus |
 * | event | `event:<name>` | the EventName enum of schemas/events/common.json |
 * | tape | `tape:<version>` | the files of schemas/tape |
 * | header | `header:<name>` | components.headers and header parameters of openapi.yaml, its bearer scheme (`Authorization`), and the DeliveryHeaders of asyncapi.yaml |
 * | limit | `limit:<name>` | section 8 of the service description (not in spec/ as data, so listed below) |
 * | delivery | `delivery:<name>` | section 6.2 and D14 to D16 (listed below) |
 *
 * Plus `op:unknown route 404 not_found`: a path or method the contract does not list (its info, D7).
 *
 * A test names the rows it covers with tags in its title, `[op:createVerification 409 duplicate_request]`,
 * as many as it covers; `covers(...)` writes them. Tags on a `describe` title count for every test in
 * it. The suite's tests of its own tools (the contract checker, the webhook receiver) cover no row of
 * the contract and say so with SELF_TEST in their describe title. A row that no black-box test can reach (a 500 the
 * suite cannot provoke, a 24-hour lifetime) is listed in NOT_TESTABLE with the reason, and shows in
 * the matrix as such.
 */

export interface MatrixRow {
  id: string;
  kind: RowKind;
  description: string;
  /** Why no black-box test can cover the row; such a row needs no test. */
  notTestable?: string;
}

export const ROW_KINDS = ['op', 'transition', 'event', 'tape', 'header', 'limit', 'delivery'] as const;
export type RowKind = (typeof ROW_KINDS)[number];

const TAG = new RegExp(`\\[((?:${ROW_KINDS.join('|')}):[^\\]]+)\\]`, 'g');

/** Marks the tests of the suite's own tools, which cover no row of the contract. */
export const SELF_TEST = '[suite self-test]';

/** ` [row] [row]`: the tags to append to a test's title. */
export function covers(...rows: string[]): string {
  return rows.map((row) => ` [${row}]`).join('');
}

/** The rows a title names. */
export function rowsNamedIn(title: string): string[] {
  return [...title.matchAll(TAG)].map((match) => match[1]!.trim());
}

/** A title without its tags. */
export function withoutTags(title: string): string {
  return title
    .replace(TAG, '')
    .replace(SELF_TEST, '')
    .replace(/\s{2,}/g, ' ')
    .trim();
}

/** Section 8 of the service description, and the endpoint limit of P14. */
const LIMITS: Array<{ name: string; description: string; notTestable?: string }> = [
  { name: 'pilot quota', description: 'pilot keys: 60 requests/minute, burst 10' },
  { name: 'production quota', description: 'production keys: 300 requests/minute, burst 50' },
  { name: 'sandbox quota', description: 'sandbox keys: 1000 requests/minute (D8: burst 100)' },
  { name: 'quota scope', description: 'per API key; all endpoints share one quota' },
  { name: 'obligor_reference length', description: 'obligor_reference is 1 to 100 characters' },
  { name: 'consent session', description: 'the consent session lasts 7 days (expires_at)' },
  {
    name: 'idempotency key lifetime',
    description: 'an Idempotency-Key is remembered for 24 hours',
    notTestable: 'a run cannot wait 24 hours; the replay within the lifetime is covered by the idempotency tests',
  },
  {
    name: 'polling interval',
    description: 'clients poll at most every 5 seconds',
    notTestable: 'a recommendation to clients, not a behaviour of the service',
  },
  { name: 'webhook receiver timeout', description: 'a receiver slower than the timeout counts as a failed attempt (6.2)' },
  { name: 'webhook endpoints per lender', description: 'at most 20 webhook endpoints per lender account (P14)' },
];

/** Section 6.2 (delivery) with D14 (retries), D15 and D16 (receivers), P15 (replay). */
const DELIVERY: Array<{ name: string; description: string }> = [
  { name: 'acknowledgement', description: 'a delivery is an HTTPS POST of JSON; any 2xx acknowledges it' },
  { name: 'retry', description: 'a non-2xx answer or a timeout is retried on the schedule, same delivery id and bytes' },
  { name: 'failed and replayed', description: 'after the last attempt the delivery is failed; a replay sends it again (P15)' },
  { name: 'verified https', description: "the receiver's certificate is verified; an untrusted or misnamed one gets nothing (D16)" },
  { name: 'private targets refused', description: 'with WEBHOOK_ALLOW_PRIVATE_TARGETS off, private and reserved addresses are refused (D16)' },
];

/** Statuses no black-box run can provoke on a healthy deployment. */
const UNPROVOKABLE: Record<string, string> = {
  '500': 'an unexpected server error cannot be provoked from outside; its shape is checked by the contract checker on made-up responses (contract.test)',
  '503': 'needs the deployment to lose its database; its shape is checked by the contract checker on made-up responses (contract.test)',
};

/** Answers of one operation that only a deployment configured to fail can give. */
const UNPROVOKABLE_ANSWERS: Record<string, string> = {
  'createVerification 422':
    "needs a deployment that can connect none of the platforms asked for (its operator configured neither provider, P32); a sandbox never refuses, a configured deployment never does: covered by the service's own tests",
};

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'];

export async function matrixRows(): Promise<MatrixRow[]> {
  const contract = await loadContract();
  const document = contract.document;
  const rows: MatrixRow[] = [];
  const components = (document.components ?? {}) as JsonObject & { responses?: Record<string, JsonObject>; headers?: Record<string, JsonObject> };

  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const method of HTTP_METHODS) {
      const operation = (item as Record<string, JsonObject | undefined>)[method] as
        (JsonObject & { operationId: string; responses?: Record<string, JsonObject> }) | undefined;
      if (!operation) continue;
      for (const [status, declared] of Object.entries(operation.responses ?? {})) {
        const response = resolve(document, declared);
        const where = `${method.toUpperCase()} ${path} answers ${status}`;
        const codes = errorCodesOf(response);
        const notTestable = UNPROVOKABLE[status] ?? UNPROVOKABLE_ANSWERS[`${operation.operationId} ${status}`];
        if (Number(status) >= 400 && codes.length > 0) {
          for (const code of codes) rows.push(row('op', `${operation.operationId} ${status} ${code}`, `${where} ${code}`, notTestable));
        } else {
          rows.push(row('op', `${operation.operationId} ${status}`, where, notTestable));
        }
      }
    }
  }

  rows.push(row('op', 'unknown route 404 not_found', 'a path or method the contract does not list is 404 not_found (D7)'));

  const statusSchema = (document.components?.schemas?.VerificationStatus ?? {}) as {
    'x-transitions'?: Array<{ from: string | null; to: string; trigger: string; emits: string | null }>;
  };
  for (const move of statusSchema['x-transitions'] ?? []) {
    rows.push(row('transition', `${move.from ?? 'new'}->${move.to}`, `${move.trigger}${move.emits ? `, emits ${move.emits}` : ''}`));
  }

  const eventCommon = JSON.parse(readFileSync(specPath('schemas', 'events', 'common.json'), 'utf8')) as { $defs: { EventName: { enum: string[] } } };
  for (const event of eventCommon.$defs.EventName.enum) rows.push(row('event', event, `the ${event} webhook event`));

  const versions = readdirSync(specPath('schemas', 'tape'))
    .filter((file) => /^\d+\.\d+\.\d+\.json$/.test(file))
    .map((file) => file.replace(/\.json$/, ''));
  for (const version of versions) rows.push(row('tape', version, `Risk Tape schema ${version}`));

  const headers = new Map<string, string>();
  headers.set('Authorization', 'request: Bearer API key (bearerAuth)');
  for (const name of Object.keys(components.headers ?? {})) headers.set(name, 'response header');
  for (const parameter of Object.values(document.components?.parameters ?? {})) {
    if (parameter.in === 'header') headers.set(parameter.name, 'request header');
  }
  const asyncapi = YAML.parse(readFileSync(specPath('asyncapi.yaml'), 'utf8')) as {
    components?: { schemas?: { DeliveryHeaders?: { properties?: Record<string, unknown> } } };
  };
  for (const name of Object.keys(asyncapi.components?.schemas?.DeliveryHeaders?.properties ?? {})) headers.set(name, 'webhook delivery header');
  for (const [name, description] of headers) rows.push(row('header', name, description));

  for (const limit of LIMITS) rows.push(row('limit', limit.name, limit.description, limit.notTestable));
  for (const delivery of DELIVERY) rows.push(row('delivery', delivery.name, delivery.description));
  return rows;
}

function row(kind: RowKind, name: string, description: string, notTestable?: string): MatrixRow {
  return notTestable ? { id: `${kind}:${name}`, kind, description, notTestable } : { id: `${kind}:${name}`, kind, description };
}

function resolve(document: JsonObject, value: JsonObject): JsonObject {
  let current = value;
  for (let depth = 0; typeof current.$ref === 'string' && depth < 10; depth++) {
    const pointer = current.$ref.replace(/^#\//, '').split('/');
    current = pointer.reduce<JsonObject>((node, part) => (node[part.replace(/~1/g, '/').replace(/~0/g, '~')] ?? {}) as JsonObject, document);
  }
  return current;
}

/** The error codes an error response documents: the `error` of each of its examples. */
function errorCodesOf(response: JsonObject): string[] {
  const content = (response.content ?? {}) as Record<string, { examples?: Record<string, { value?: { error?: string } }>; example?: { error?: string } }>;
  const codes = new Set<string>();
  for (const media of Object.values(content)) {
    if (media.example?.error) codes.add(media.example.error);
    for (const example of Object.values(media.examples ?? {})) if (example.value?.error) codes.add(example.value.error);
  }
  return [...codes].sort();
}

// ---------------------------------------------------------------- results

export type Outcome = 'passed' | 'failed' | 'skipped';

export interface TestRecord {
  selfTest?: boolean;
  /** Full title without the target and the tags: the same on every target. */
  id: string;
  target: string;
  outcome: Outcome;
  rows: string[];
  skipReason?: string;
  error?: string;
  durationMs?: number;
}

export interface MatrixEntry extends MatrixRow {
  status: 'pass' | 'fail' | 'skip' | 'not run' | 'not testable' | 'uncovered';
  tests: Array<{ id: string; target: string; outcome: Outcome; skipReason?: string }>;
  /**
   * How deep the row's tests go: the service repository's planted defects (`npm run
   * conformance:mutants`) that break the row's rule and that these tests kill. A row with none is
   * covered by tests no planted defect has shown to fail.
   */
  mutants: string[];
}

export interface Matrix {
  rows: MatrixEntry[];
  /** Tests that name a row the contract does not have. */
  unknownRows: Array<{ test: string; row: string }>;
  /** Tests that name no row. */
  untagged: string[];
}

export function buildMatrix(
  rows: MatrixRow[],
  records: TestRecord[],
  declared: Array<{ id: string; rows: string[]; selfTest?: boolean }> = records,
  mutantsByRow: Readonly<Record<string, readonly string[]>> = MUTANTS_BY_ROW,
): Matrix {
  const known = new Set(rows.map((r) => r.id));
  const unknownRows: Matrix['unknownRows'] = [];
  const untagged = new Set<string>();
  for (const test of declared) {
    if (test.rows.length === 0 && !test.selfTest) untagged.add(test.id);
    for (const name of test.rows) if (!known.has(name)) unknownRows.push({ test: test.id, row: name });
  }
  const declaredFor = new Map<string, Set<string>>();
  for (const test of declared) for (const name of test.rows) (declaredFor.get(name) ?? declaredFor.set(name, new Set()).get(name)!).add(test.id);

  const entries = rows.map((r): MatrixEntry => {
    const tests = records
      .filter((record) => record.rows.includes(r.id))
      .map(({ id, target, outcome, skipReason }) => (skipReason ? { id, target, outcome, skipReason } : { id, target, outcome }));
    let status: MatrixEntry['status'];
    if (tests.some((t) => t.outcome === 'failed')) status = 'fail';
    else if (tests.some((t) => t.outcome === 'passed')) status = 'pass';
    else if (tests.length > 0) status = 'skip';
    else if (r.notTestable) status = 'not testable';
    else if (declaredFor.has(r.id)) status = 'not run';
    else status = 'uncovered';
    return { ...r, status, tests, mutants: [...(mutantsByRow[r.id] ?? [])] };
  });
  return { rows: entries, unknownRows: dedupe(unknownRows), untagged: [...untagged] };
}

function dedupe<T>(items: T[]): T[] {
  const seen = new Set<string>();
  return items.filter((item) => {
    const key = JSON.stringify(item);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** What is wrong with the tagging, one line per problem; empty when every row has a test and every test names a row. */
export function coverageProblems(matrix: Matrix): string[] {
  const problems: string[] = [];
  for (const entry of matrix.rows)
    if (entry.status === 'uncovered') problems.push(`row ${entry.id} (${entry.description}) has no test: tag a test that covers it with [${entry.id}]`);
  for (const { test, row: name } of matrix.unknownRows) problems.push(`test "${test}" names [${name}], which is no row of the contract`);
  for (const test of matrix.untagged)
    problems.push(`test "${test}" names no row: add the tags of the rows it covers (see conformance/README.md, "Coverage tags")`);
  return problems;
}

export function matrixMarkdown(matrix: Matrix, heading: string): string {
  const lines = [`# ${heading}`, ''];
  const counts = new Map<string, number>();
  for (const entry of matrix.rows) counts.set(entry.status, (counts.get(entry.status) ?? 0) + 1);
  lines.push(`${matrix.rows.length} rows: ${[...counts].map(([status, n]) => `${n} ${status}`).join(', ')}.`, '');
  const testable = matrix.rows.filter((entry) => !entry.notTestable);
  const withMutants = testable.filter((entry) => entry.mutants.length > 0);
  lines.push(
    `Depth: ${withMutants.length} of ${testable.length} testable rows have planted defects their tests kill (${withMutants.reduce((n, e) => n + e.mutants.length, 0)} in all, column Mutants: \`npm run conformance:mutants\` in the service repository).`,
    '',
  );
  for (const kind of ROW_KINDS) {
    const entries = matrix.rows.filter((entry) => entry.kind === kind);
    if (entries.length === 0) continue;
    lines.push(`## ${kind}`, '', '| Row | What | Status | Tests | Mutants |', '|---|---|---|---|---|');
    for (const entry of entries) {
      const tests =
        entry.tests.length > 0
          ? [...new Map(entry.tests.map((t) => [`${t.id}|${t.outcome}`, t])).values()]
              .map((t) => `${escapeCell(t.id)} (${t.outcome}${t.skipReason ? `: ${escapeCell(t.skipReason)}` : ''})`)
              .join('<br>')
          : entry.notTestable
            ? escapeCell(entry.notTestable)
            : '';
      const mutants = entry.mutants.map((id) => `\`${id}\``).join('<br>');
      lines.push(`| \`${entry.id}\` | ${escapeCell(entry.description)} | ${entry.status} | ${tests} | ${mutants} |`);
    }
    lines.push('');
  }
  if (matrix.unknownRows.length > 0 || matrix.untagged.length > 0) {
    lines.push(
      '## Problems',
      '',
      ...coverageProblems(matrix)
        .filter((p) => !p.startsWith('row '))
        .map((p) => `- ${p}`),
      '',
    );
  }
  return lines.join('\n');
}

const escapeCell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
