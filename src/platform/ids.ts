import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniform random base62 text; rejection sampling keeps every character equally likely. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += ALPHABET[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** Opaque identifiers with a type prefix (`vrf_`, `lnd_`, ...): 20 base62 characters, about 119 bits. */
export function newId(prefix: 'vrf' | 'lnd' | 'key' | 'whk' | 'evt' | 'ovl' | 'ers' | 'rvk'): string {
  return `${prefix}_${randomBase62(20)}`;
}
