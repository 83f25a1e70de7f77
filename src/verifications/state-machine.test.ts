import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { findTransition, TRANSITIONS, VERIFICATION_STATES } from './state-machine.ts';

const spec = parse(readFileSync(new URL('../../spec/openapi.yaml', import.meta.url), 'utf8'));
const status = spec.components.schemas.VerificationStatus;

describe('verification state machine', () => {
  it('is the table published in the spec (x-transitions)', () => {
    assert.deepEqual(
      TRANSITIONS.map(({ from, trigger, to, emits, reasons }) => ({ from, trigger, to, emits, ...(reasons ? { reasons } : {}) })),
      status['x-transitions'],
    );
    assert.deepEqual([...VERIFICATION_STATES], status.enum);
  });

  it('lets nothing leave completed, failed, expired or cancelled', () => {
    const terminal = VERIFICATION_STATES.filter((state) => !TRANSITIONS.some((transition) => transition.from === state));
    assert.deepEqual(terminal, ['completed', 'failed', 'expired', 'cancelled']);
    for (const state of terminal) {
      for (const transition of TRANSITIONS) assert.equal(findTransition(state, transition.trigger), undefined);
    }
  });

  it('reaches every state from creation', () => {
    const reached = new Set<string>();
    const frontier: Array<string | null> = [null];
    while (frontier.length > 0) {
      const from = frontier.pop()!;
      for (const t of TRANSITIONS.filter((t) => t.from === from && !reached.has(t.to))) {
        reached.add(t.to);
        frontier.push(t.to);
      }
    }
    assert.deepEqual([...reached].sort(), [...VERIFICATION_STATES].sort());
  });
});
