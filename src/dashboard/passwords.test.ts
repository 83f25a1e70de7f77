import assert from 'node:assert/strict';
import { hashPassword, UNKNOWN_USER_HASH, verifyPassword } from './passwords.ts';

describe('dashboard passwords (scrypt)', () => {
  it('stores scrypt with its cost and a salt of its own, and matches only the same password', async () => {
    const [one, two] = await Promise.all([hashPassword('correct horse battery'), hashPassword('correct horse battery')]);
    assert.match(one, /^scrypt\$32768\$8\$1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/);
    assert.notEqual(one, two, 'salted per user');
    assert.equal(await verifyPassword('correct horse battery', one), true);
    assert.equal(await verifyPassword('correct horse batterY', one), false);
    assert.equal(await verifyPassword('', one), false);
  });

  it('never matches the stand-in hash of unknown users, nor a malformed hash', async () => {
    assert.equal(await verifyPassword('', UNKNOWN_USER_HASH), false);
    assert.equal(await verifyPassword('anything', 'plain'), false);
    assert.equal(await verifyPassword('anything', 'scrypt$1$1$1$$'), false);
  });
});
