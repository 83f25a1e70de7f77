import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Bytes from the CSPRNG, drawn 4 KiB at a time and each used once: a creation takes its ids and its
 * consent token here, and a call into the CSPRNG for each (with a new buffer of twice the length)
 * cost about 2 % of its CPU (docs/performance.md). Node's `randomUUID` keeps such a pool too.
 */
const pool = Buffer.alloc(4096);
let used = pool.length;

function randomByte(): number {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  return pool[used++]!;
}

/** Uniform random base62 text; rejection sampling keeps every character equally likely. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomByte();
    if (byte < 248) out += ALPHABET[byte % 62];
  }
  return out;
}

const TIME_DIGITS = 8;

type IdPrefix = 'vrf' | 'lnd' | 'key' | 'whk' | 'evt' | 'ovl' | 'ers' | 'rvk' | 'tap';

/**
 * Opaque identifiers with a type prefix (`vrf_`, `lnd_`, ...): 20 characters, the wall clock's
 * millisecond in 8 base36 digits (uppercase, good until 2059) then 12 random base62 characters
 * (about 71 bits, so ids made in one millisecond do not collide).
 *
 * Why time first: every index holding an id (a table's key, the events' and the tapes' verification
 * id) then takes a commit's new rows at one place, its right-hand end on a new database, so they
 * share a few pages. Wholly random ids put each new row on a page of its own anywhere in the index,
 * and each such page is written to the WAL and again at the checkpoint: on SQLite they nearly
 * doubled the bytes a creation writes, and creations per second rose 8-17 % without them
 * (docs/performance.md). Digits and uppercase letters sort the same under the C collation and under
 * English-like ones (where `a` sorts before `B`); a collation that reorders letters (Lithuanian's
 * `Y`, Danish's `AA`) loses some of that locality, never correctness.
 *
 * Nothing relies on an id being unguessable: secrets (keys, consent tokens, webhook secrets) are
 * drawn whole by `randomBase62`, and every read is scoped to its lender. The millisecond an id shows
 * is when its resource was made, which its lender reads anyway (`created_at`); a request log line
 * that names an id tells that time too (docs/data-protection.md).
 */
export function newId(prefix: IdPrefix): string {
  return newIdAt(prefix, Date.now());
}

/** `newId` as made at the wall clock's millisecond `at`. */
export function newIdAt(prefix: IdPrefix, at: number): string {
  return `${prefix}_${at.toString(36).toUpperCase().padStart(TIME_DIGITS, '0')}${randomBase62(20 - TIME_DIGITS)}`;
}
