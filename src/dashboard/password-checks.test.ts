import assert from 'node:assert/strict';
import { PasswordChecks } from './password-checks.ts';

describe('password checks of sign-in', () => {
  it('runs at most `concurrency` at once, lets `maxWaiting` wait, refuses the rest at once, and makes room as checks end', async () => {
    const checks = new PasswordChecks({ concurrency: 2, maxWaiting: 3 });
    let running = 0;
    let peak = 0;
    const ends: Array<() => void> = [];
    const check = () =>
      new Promise<string>((resolve) => {
        running += 1;
        peak = Math.max(peak, running);
        ends.push(() => {
          running -= 1;
          resolve('checked');
        });
      });
    const outcomes = Array.from({ length: 8 }, () => checks.run(check));
    const settled = await Promise.all(outcomes.slice(5));
    assert.deepEqual(settled, ['busy', 'busy', 'busy'], 'beyond 2 running and 3 waiting');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(running, 2);
    assert.equal(checks.hasRoom, false);
    ends.shift()!();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(checks.hasRoom, true, 'a waiting place came free');
    for (let i = 0; i < 4; i += 1) {
      await new Promise((resolve) => setImmediate(resolve));
      ends.shift()!();
    }
    assert.deepEqual(await Promise.all(outcomes.slice(0, 5)), Array<string>(5).fill('checked'));
    assert.equal(peak, 2);
  });
});
