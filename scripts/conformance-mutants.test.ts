import assert from 'node:assert/strict';
import { checkMutants, MUTANTS } from './conformance-mutants.ts';

// The mutant run (CI) refuses to start when a mutant's text has left its file; this finds that in
// `npm test`, in the change that moved the text, rather than in the mutant stage of CI.
describe('conformance mutants', () => {
  it("each mutant's text is in its file exactly once", () => {
    assert.deepEqual(checkMutants(MUTANTS), []);
  });
});
