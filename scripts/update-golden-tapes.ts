// Rewrites spec/examples/tapes/<reference>.json: the tape of each synthetic creator (section 2.6),
// rbf under the default policy, computed at GOLDEN_NOW. Review the diff before committing: these
// files are the reviewed data that src/tape/golden.test.ts holds the engine to.
// Usage: npx tsx scripts/update-golden-tapes.ts
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { computeTape, SYNTHETIC_CREATORS, syntheticTapeInput, type SyntheticReference } from '../src/tape/index.ts';
import { GOLDEN_NOW, goldenVerificationId } from '../test/support/golden.ts';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'spec/examples/tapes');
mkdirSync(dir, { recursive: true });
const now = new Date(GOLDEN_NOW);
for (const reference of Object.keys(SYNTHETIC_CREATORS) as SyntheticReference[]) {
  const tape = computeTape(syntheticTapeInput(reference, { now, verificationId: goldenVerificationId(reference) }), { now });
  writeFileSync(join(dir, `${reference}.json`), JSON.stringify(tape, null, 2) + '\n');
  console.log(`${reference}.json: ${tape.eligibility.tier}, max advance EUR ${tape.eligibility.max_advance_eur}`);
}
