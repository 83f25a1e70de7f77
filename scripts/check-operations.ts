// Lists every operationId of spec/openapi.yaml without a handler. Pending operations (listed in
// src/operations.ts with what delivers them) are printed; an operation that is neither handled nor
// pending fails the check.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { operationCoverage } from '../src/operations.ts';

const spec = parse(readFileSync(new URL('../spec/openapi.yaml', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, { operationId: string }>>;
};
const ids: string[] = Object.values(spec.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
const coverage = operationCoverage(ids);

console.log(`${ids.length} operations: ${coverage.handled.length} handled, ${coverage.pending.length} pending`);
for (const { operationId, deliveredBy } of coverage.pending) console.log(`  pending  ${operationId.padEnd(24)} (${deliveredBy})`);
const problems = [
  ...coverage.missing.map((id) => `no handler and not pending: ${id}`),
  ...coverage.stale.map((id) => `handled but still listed as pending: ${id}`),
  ...coverage.unknown.map((id) => `not in the spec: ${id}`),
];
for (const problem of problems) console.error(`  error    ${problem}`);
process.exit(problems.length > 0 ? 1 : 0);
