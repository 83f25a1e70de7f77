import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { operationCoverage } from './operations.ts';

const spec = parse(readFileSync(new URL('../spec/openapi.yaml', import.meta.url), 'utf8'));
const specOperationIds: string[] = Object.values<Record<string, { operationId: string }>>(spec.paths).flatMap((item) =>
  Object.values(item).map((operation) => operation.operationId),
);

describe('operation handlers', () => {
  const coverage = operationCoverage(specOperationIds);

  it('reads every operation of the spec', () => {
    assert.equal(new Set(specOperationIds).size, specOperationIds.length, 'operationIds are not unique');
    assert.ok(specOperationIds.length >= 15);
  });

  it('has a handler or a pending entry for every operation', () => {
    assert.deepEqual(coverage.missing, []);
  });

  it('has no pending entry for a handled operation', () => {
    assert.deepEqual(coverage.stale, []);
  });

  it('handles or lists nothing that is not in the spec', () => {
    assert.deepEqual(coverage.unknown, []);
  });
});
