import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

// Dashboard passwords, hashed with scrypt (memory-hard: each guess costs 32 MiB and tens of
// milliseconds) under a salt of their own. Stored as `scrypt$N$r$p$salt$hash` so the cost can be
// raised later without making stored hashes unreadable.

const COST = { N: 2 ** 15, r: 8, p: 1 };
const KEY_BYTES = 32;
/** scrypt needs 128·N·r bytes; Node's default ceiling (32 MiB) is exactly that, so room is made. */
const MAX_MEMORY = 64 * 1024 * 1024;

export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 200;

function derive(password: string, salt: Buffer, keyBytes: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, keyBytes, { ...options, maxmem: MAX_MEMORY }, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(password, salt, KEY_BYTES, COST);
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64'), hash.toString('base64')].join('$');
}

/** True when `password` matches `stored`; compares in constant time, and a malformed hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await derive(password, Buffer.from(salt, 'base64'), expected.length, { N: Number(n), r: Number(r), p: Number(p) });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * A hash no password matches, checked when the email is unknown: a sign-in then takes as long as
 * one with a wrong password, so timing does not tell which addresses have accounts.
 */
export const UNKNOWN_USER_HASH = `scrypt$${COST.N}$${COST.r}$${COST.p}$${Buffer.alloc(16).toString('base64')}$${Buffer.alloc(KEY_BYTES).toString('base64')}`;
