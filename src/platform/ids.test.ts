import assert from 'node:assert/strict';
import { newId, newIdAt, randomBase62 } from './ids.ts';

describe('random identifiers', () => {
  it('draws text of the length asked for, from the base62 alphabet only', () => {
    for (const length of [1, 20, 43, 300]) assert.match(randomBase62(length), new RegExp(`^[0-9A-Za-z]{${length}}$`));
    assert.match(newId('vrf'), /^vrf_[0-9A-Za-z]{20}$/);
  });

  it('starts an id with its millisecond, so later ids sort after earlier ones byte-wise and in en-US', () => {
    // From 1994 to 2059, across carries from 9 to A and from Z to the next digit: a byte-wise order
    // (SQLite, PostgreSQL's C collation) and an English one (where `a` sorts before `B`) agree.
    const digit = 36 ** 7;
    const times = [10 * digit - 1, 10 * digit, 11 * digit - 1, 11 * digit, 1e12, 1e12 + 1, 1764270000000, 36 ** 8 - 1];
    const ids = times.map((time) => newIdAt('vrf', time));
    assert.equal(ids[0]!.slice(0, 12), 'vrf_9ZZZZZZZ');
    assert.equal(ids[1]!.slice(0, 12), 'vrf_A0000000');
    for (const id of ids) assert.match(id, /^vrf_[0-9A-Z]{8}[0-9A-Za-z]{12}$/);
    const collator = new Intl.Collator('en-US');
    for (let i = 1; i < ids.length; i++) {
      assert.ok(ids[i - 1]! < ids[i]!, `${ids[i - 1]} sorts before ${ids[i]} byte-wise`);
      assert.ok(collator.compare(ids[i - 1]!, ids[i]!) < 0, `${ids[i - 1]} sorts before ${ids[i]} in en-US`);
    }
    assert.equal(newIdAt('evt', 1e12).slice(0, 12), 'evt_CRE66I9S', 'the millisecond 10^12 in base36');
  });

  it('takes the millisecond from the wall clock', () => {
    const before = Date.now();
    const id = newId('lnd');
    const after = Date.now();
    const at = parseInt(id.slice(4, 12), 36);
    assert.ok(before <= at && at <= after, `${id} made between ${before} and ${after}`);
  });

  it('keeps ids of one millisecond apart by their random part', () => {
    const ids = Array.from({ length: 10_000 }, () => newIdAt('evt', 1764270000000));
    assert.equal(new Set(ids).size, ids.length);
    assert.equal(new Set(ids.map((id) => id.slice(0, 12))).size, 1);
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
