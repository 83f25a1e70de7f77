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

/** Opaque identifiers with a type prefix (`vrf_`, `lnd_`, ...): 20 base62 characters, about 119 bits. */
export function newId(prefix: 'vrf' | 'lnd' | 'key' | 'whk' | 'evt' | 'ovl' | 'ers' | 'rvk'): string {
  return `${prefix}_${randomBase62(20)}`;
}
