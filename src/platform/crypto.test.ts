import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { decryptSecret, encryptSecret, keptDecryption } from './crypto.ts';

describe('secrets at rest', () => {
  const key = randomBytes(32);

  it('round-trips and never stores the plaintext', () => {
    const stored = encryptSecret(key, 'whsec_abc123');
    assert.ok(!stored.includes('whsec_abc123'));
    assert.notEqual(stored, encryptSecret(key, 'whsec_abc123'), 'the same secret encrypts differently each time');
    assert.equal(decryptSecret(key, stored), 'whsec_abc123');
  });

  it('refuses a tampered value or another key', () => {
    const stored = encryptSecret(key, 'whsec_abc123');
    const [v, iv, tag, data] = stored.split('.');
    const flipped = Buffer.from(data!, 'base64url');
    flipped[0] = flipped[0]! ^ 1;
    assert.throws(() => decryptSecret(key, [v, iv, tag, flipped.toString('base64url')].join('.')));
    assert.throws(() => decryptSecret(randomBytes(32), stored));
  });

  it('keeps what it opened, and still opens and refuses as decryptSecret does', () => {
    const open = keptDecryption(key, 2);
    const stored = ['a', 'b', 'c'].map((secret) => encryptSecret(key, `whsec_${secret}`));
    // Past its size, the least recently used is opened again rather than answered wrongly.
    for (let round = 0; round < 2; round++) assert.deepEqual(stored.map(open), ['whsec_a', 'whsec_b', 'whsec_c']);
    const foreign = encryptSecret(randomBytes(32), 'whsec_d');
    assert.throws(() => open(foreign));
    assert.throws(() => open(foreign), 'a refusal is not kept as an answer');
  });
});
