import assert from 'node:assert/strict';
import { newId, randomBase62 } from './ids.ts';

describe('random identifiers', () => {
  it('draws text of the length asked for, from the base62 alphabet only', () => {
    for (const length of [1, 20, 43, 300]) assert.match(randomBase62(length), new RegExp(`^[0-9A-Za-z]{${length}}$`));
    assert.match(newId('vrf'), /^vrf_[0-9A-Za-z]{20}$/);
  });

  it('never repeats across many refills of the byte pool, and uses every character about equally', () => {
    // 2,000 consent tokens use about 90,000 random bytes: some twenty refills of the 4 KiB pool.
    const tokens = Array.from({ length: 2_000 }, () => randomBase62(43));
    assert.equal(new Set(tokens).size, tokens.length);
    const counts = new Map<string, number>();
    for (const token of tokens) for (const char of token) counts.set(char, (counts.get(char) ?? 0) + 1);
    assert.equal(counts.size, 62);
    // 86,000 characters, about 1,387 of each: a byte reused or a character favoured would show far
    // outside these bounds (more than eight standard deviations each way).
    const expected = 86_000 / 62;
    for (const [char, count] of counts) assert.ok(Math.abs(count - expected) < 300, `${char} drawn ${count} times`);
  });

  it('starts each text on fresh bytes: two draws never share their characters in lockstep', () => {
    // Were a byte used twice, consecutive tokens would share runs of characters.
    const first = randomBase62(4096);
    const second = randomBase62(4096);
    let same = 0;
    for (let i = 0; i < first.length; i++) if (first[i] === second[i]) same++;
    // By chance about 4096 / 62 = 66 positions agree.
    assert.ok(same < 150, `${same} positions agree`);
  });
});
