import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { checkMutantRows, checkMutants, MUTANT_ROWS_FILE, mutantRowsSource, MUTANTS } from './conformance-mutants.ts';

// The mutant run (CI) refuses to start when a mutant's text has left its file; this finds that in
// `npm test`, in the change that moved the text, rather than in the mutant stage of CI.
describe('conformance mutants', () => {
  it("each mutant's text is in its file exactly once", () => {
    assert.deepEqual(checkMutants(MUTANTS), []);
  });

  it('each mutant names rows of the matrix, and only testable ones', async () => {
    assert.deepEqual(await checkMutantRows(MUTANTS), []);
  });

  // The matrix shows per row the mutants that its tests kill; it reads them from this generated file.
  it(`${MUTANT_ROWS_FILE} lists the mutants of each row as the mutant list does (npm run conformance:mutants -- --write-rows)`, async () => {
    assert.equal(readFileSync(new URL(`../${MUTANT_ROWS_FILE}`, import.meta.url), 'utf8'), await mutantRowsSource(MUTANTS));
  });
});
