import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';

/**
 * Secrets at rest (webhook signing secrets, OAuth tokens): AES-256-GCM under the service's
 * encryption key (D22). The stored form is `v1.<iv>.<tag>.<ciphertext>` in base64url, so a later
 * key or algorithm can be told apart.
 */
export function encryptSecret(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), ciphertext].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
}

export function decryptSecret(key: Buffer, stored: string): string {
  const [version, iv, tag, ciphertext] = stored.split('.');
  if (version !== 'v1' || !iv || !tag || ciphertext === undefined) throw new Error('unrecognised encrypted secret');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
}

/**
 * `decryptSecret` under `key` for the same few ciphertexts read again and again (consent links that
 * polling lenders read, webhook secrets that sign every delivery): each is opened once and kept, by
 * its ciphertext, among the `max` most recently used. A cipher context per call cost 2-2.5 % of those
 * paths' CPU (docs/performance.md). The process holds the key that opens them anyway; a changed
 * secret is a new ciphertext, and one no longer read ages out.
 */
export function keptDecryption(key: Buffer, max: number): (stored: string) => string {
  const opened = new LRUCache<string, string>({ max });
  return (stored) => {
    let plaintext = opened.get(stored);
    if (plaintext === undefined) {
      plaintext = decryptSecret(key, stored);
      opened.set(stored, plaintext);
    }
    return plaintext;
  };
}

/** For looking up a high-entropy secret (a token, an OAuth state) by a value that cannot be reversed. */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/**
 * A keyed hash for finding an encrypted value by equality without decrypting every row (a blind
 * index). Its key is derived from the encryption key for this one use, so neither reveals the other.
 */
export function blindIndex(encryptionKey: Buffer, purpose: string, value: string): string {
  const key = Buffer.from(hkdfSync('sha256', encryptionKey, Buffer.alloc(0), `blind-index:${purpose}`, 32));
  return createHmac('sha256', key).update(value).digest('hex');
}
