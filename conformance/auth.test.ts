import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { forEachTarget, requireKey, type ApiResponse, type Target } from './harness.ts';

/** Security: section 5 and D9/D10. Who gets in, with which key, and what a refused caller learns. */

const PROTECTED_PATH = '/api/v1/verifications/vrf_unknown';
const GDPR_ACCESS_PATH = '/api/v1/gdpr/access?obligor_id=x';
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function randomBase62(length: number): string {
  return Array.from(randomBytes(length), (byte) => BASE62[byte % BASE62.length]).join('');
}

/** A syntactically valid key nobody issued, for the given deployment mode. */
function unissuedKey(mode: Target['mode']): string {
  return `${mode === 'production' ? 'civ_live_' : 'civ_test_'}${randomBase62(40)}`;
}

function assertUnauthorized(response: ApiResponse, ...keysThatMustNotLeak: string[]): void {
  assert.equal(response.status, 401, response.text);
  const body = response.json as { error: string; message: string };
  assert.equal(body.error, 'unauthorized');
  assert.ok(body.message.length > 0, 'the message says what is wrong');
  assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer\b/i, 'WWW-Authenticate names the Bearer scheme');
  for (const key of keysThatMustNotLeak) assert.ok(!response.text.includes(key), 'the refused key is not echoed back');
}

forEachTarget((target) => {
  describe('security: authentication (401 unauthorized) [header:Authorization]', () => {
    it('accepts the lender key, so the refusals below are about the header and nothing else', async () => {
      const response = await target.api.get(PROTECTED_PATH);
      assert.equal(response.status, 404);
      assert.equal((response.json as { error: string }).error, 'not_found');
    });

    it('refuses a request without an Authorization header', async () => {
      assertUnauthorized(await target.api.get(PROTECTED_PATH, { key: null }));
    });

    it('refuses an empty Authorization header', async () => {
      assertUnauthorized(await target.api.get(PROTECTED_PATH, { authorization: '' }));
    });

    it('refuses the Basic scheme', async () => {
      const credentials = Buffer.from(`conformance:${target.keys.lender}`).toString('base64');
      assertUnauthorized(await target.api.get(PROTECTED_PATH, { authorization: `Basic ${credentials}` }), target.keys.lender);
    });

    it('refuses the Basic scheme even when it carries a valid key as its credentials', async () => {
      assertUnauthorized(await target.api.get(PROTECTED_PATH, { authorization: `Basic ${target.keys.lender}` }), target.keys.lender);
    });

    it('refuses Bearer without a token', async () => {
      assertUnauthorized(await target.api.get(PROTECTED_PATH, { authorization: 'Bearer' }));
    });

    it('refuses Bearer with two tokens, even two valid ones', async () => {
      const key = target.keys.lender;
      assertUnauthorized(await target.api.get(PROTECTED_PATH, { authorization: `Bearer ${key} ${key}` }), key);
    });

    it('refuses a malformed key', async () => {
      const key = 'not-an-api-key';
      assertUnauthorized(await target.api.get(PROTECTED_PATH, { apiKey: key }), key);
    });

    it('refuses a valid key with a character changed', async () => {
      const key = target.keys.lender;
      const last = key.at(-1) === 'A' ? 'B' : 'A';
      const tampered = `${key.slice(0, -1)}${last}`;
      assertUnauthorized(await target.api.get(PROTECTED_PATH, { apiKey: tampered }), tampered);
    });

    it('refuses a well-formed key that was never issued', async () => {
      const key = unissuedKey(target.mode);
      assertUnauthorized(await target.api.get(PROTECTED_PATH, { apiKey: key }), key);
    });

    it('refuses a key of the other mode (a civ_live_ key on a sandbox, a civ_test_ key in production)', async () => {
      const key = unissuedKey(target.mode === 'sandbox' ? 'production' : 'sandbox');
      assertUnauthorized(await target.api.get(PROTECTED_PATH, { apiKey: key }), key);
    });

    it('refuses a revoked key from its next request on (D9)', async function () {
      if (target.operator) {
        const issued = await target.operator.createKey(target.lenderId!, 'lender');
        const beforeRevocation = await target.api.get(PROTECTED_PATH, { apiKey: issued.api_key });
        assert.equal(beforeRevocation.status, 404, 'the new key works before it is revoked');
        await target.operator.revokeKey(issued.id);
        assertUnauthorized(await target.api.get(PROTECTED_PATH, { apiKey: issued.api_key }), issued.api_key);
      } else {
        const revoked = requireKey(this, target, 'revoked');
        assertUnauthorized(await target.api.get(PROTECTED_PATH, { key: 'revoked' }), revoked);
      }
    });

    it('authenticates before validating: a bad body without a key is 401, not 400', async () => {
      const response = await target.api.post('/api/v1/verifications', {
        key: null,
        headers: { 'content-type': 'application/json' },
        body: '{"obligor_reference": ',
      });
      assertUnauthorized(response);
    });

    it('authenticates before routing: an unknown /api/v1 route without a key is 401, so routes cannot be probed', async () => {
      assertUnauthorized(await target.api.get('/api/v1/no-such-resource', { key: null }));
    });

    it('authenticates before authorising: a GDPR endpoint without a key is 401, not 403', async () => {
      assertUnauthorized(await target.api.get(GDPR_ACCESS_PATH, { key: null }));
    });

    it('needs no key for the probes and the published contract', async () => {
      for (const path of ['/healthz', '/readyz', '/openapi.json']) {
        const response = await target.api.get(path, { key: null });
        assert.equal(response.status, 200, `${path}: ${response.text.slice(0, 200)}`);
      }
    });
  });

  describe('security: roles (403 forbidden) [header:Authorization]', () => {
    it('refuses a gdpr_admin key on GET /api/v1/verifications/{id}', async function () {
      requireKey(this, target, 'gdpr');
      const response = await target.api.get(PROTECTED_PATH, { key: 'gdpr' });
      assert.equal(response.status, 403, response.text);
      assert.equal((response.json as { error: string }).error, 'forbidden');
    });

    it('refuses a lender key on GET /api/v1/gdpr/access', async () => {
      const response = await target.api.get(GDPR_ACCESS_PATH, { key: 'lender' });
      assert.equal(response.status, 403, response.text);
      assert.equal((response.json as { error: string }).error, 'forbidden');
    });

    it('checks the role before validating: a lender key with an invalid body on POST /api/v1/gdpr/erase is 403, not 400', async () => {
      const response = await target.api.post('/api/v1/gdpr/erase', { key: 'lender', json: { unexpected: true } });
      assert.equal(response.status, 403, response.text);
      assert.equal((response.json as { error: string }).error, 'forbidden');
    });

    it('lets the gdpr_admin key past the role check of GET /api/v1/gdpr/access', async function () {
      requireKey(this, target, 'gdpr');
      const response = await target.api.get(GDPR_ACCESS_PATH, { key: 'gdpr' });
      assert.ok(![401, 403].includes(response.status), `expected neither 401 nor 403: ${response.status} ${response.text}`);
    });
  });
});
