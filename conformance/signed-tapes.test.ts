import assert from 'node:assert/strict';
import { createPublicKey, verify, type JsonWebKey } from 'node:crypto';
import { forEachTarget, requireSandbox } from './harness.ts';
import { covers } from './matrix.ts';
import { created, getTape, SCHEMA_VERSIONS } from './sandbox.ts';

/**
 * Signed Risk Tapes (P26): the tape response's X-Tape-Signature is a detached compact JWS (RFC 7515,
 * Appendix F) over the exact bytes of the body, verifiable with a key of GET /.well-known/jwks.json.
 * Verified here with node:crypto alone, as any JOSE implementation would, so the check does not
 * share a library with the service.
 */

interface PublishedKey extends JsonWebKey {
  kid: string;
  alg: string;
}

/** True when `detached` is a valid ES256 signature of `bytes` by the key of its `kid`; throws when the JWS is malformed or names no published key. */
function verifiesOver(bytes: Uint8Array, detached: string, keys: PublishedKey[]): boolean {
  const parts = detached.split('.');
  assert.equal(parts.length, 3, 'a compact JWS has three parts');
  const [encodedHeader, payload, signature] = parts as [string, string, string];
  assert.equal(payload, '', 'detached: the payload part is empty');
  const header = JSON.parse(Buffer.from(encodedHeader, 'base64url').toString('utf8')) as { alg?: string; kid?: string; b64?: unknown; crit?: unknown };
  assert.equal(header.alg, 'ES256');
  assert.equal(header.b64, undefined, 'the payload is base64url-encoded (RFC 7515 Appendix F, not RFC 7797)');
  const jwk = keys.find((key) => key.kid === header.kid);
  assert.ok(jwk, `the signature's kid ${header.kid} is published at /.well-known/jwks.json`);
  const signingInput = Buffer.from(`${encodedHeader}.${Buffer.from(bytes).toString('base64url')}`, 'ascii');
  return verify('sha256', signingInput, { key: createPublicKey({ key: jwk, format: 'jwk' }), dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64url'));
}

forEachTarget((target) => {
  describe('happy: signed Risk Tapes (P26)', function () {
    let keys: PublishedKey[];

    it(`GET /.well-known/jwks.json: public, cacheable, ES256 P-256 keys with kid and no private part${covers('op:getTapeSigningKeys 200')}`, async () => {
      const response = await target.api.get('/.well-known/jwks.json', { key: null });
      assert.equal(response.status, 200, response.text);
      assert.match(response.headers.get('cache-control') ?? '', /\bpublic\b.*\bmax-age=\d+/);
      keys = (response.json as { keys: PublishedKey[] }).keys;
      assert.ok(keys.length >= 1);
      for (const key of keys) {
        assert.equal(key.kty, 'EC');
        assert.equal(key.alg, 'ES256');
        assert.ok(!('d' in key), 'no private key material');
      }
      assert.equal(new Set(keys.map((key) => key.kid)).size, keys.length, 'kids are unique');
    });

    it(`every schema version: X-Tape-Signature verifies over the raw bytes of the tape response; one byte altered fails${covers(
      'header:X-Tape-Signature',
      'op:getVerificationTape 200',
    )}`, async function () {
      requireSandbox(this, target);
      if (!keys) keys = ((await target.api.get('/.well-known/jwks.json', { key: null })).json as { keys: PublishedKey[] }).keys;
      const verification = await created(target, { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] });
      assert.equal(verification.status, 'completed');
      for (const version of SCHEMA_VERSIONS) {
        const response = await getTape(target, verification.verification_id, version);
        assert.equal(response.status, 200, response.text);
        const signature = response.headers.get('x-tape-signature');
        assert.ok(signature, 'the tape response carries X-Tape-Signature');
        assert.ok(verifiesOver(response.bytes, signature, keys), `${version}: the signature verifies over the bytes received`);

        const altered = Uint8Array.from(response.bytes);
        const at = Buffer.from(altered).indexOf(version);
        assert.ok(at > 0);
        altered[at] = altered[at]! ^ 0x01;
        assert.equal(verifiesOver(altered, signature, keys), false, `${version}: one byte altered, the signature no longer verifies`);
        // A parsed and re-serialised body is other bytes: what is verified is what was received.
        const reserialised = Buffer.from(JSON.stringify(response.json, null, 1));
        assert.equal(verifiesOver(reserialised, signature, keys), false);
      }
    });

    it(`another verification's tape is signed over its own bytes: a signature does not carry over${covers('header:X-Tape-Signature')}`, async function () {
      requireSandbox(this, target);
      if (!keys) keys = ((await target.api.get('/.well-known/jwks.json', { key: null })).json as { keys: PublishedKey[] }).keys;
      const first = await created(target, { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] });
      const second = await created(target, { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] });
      const [a, b] = [await getTape(target, first.verification_id), await getTape(target, second.verification_id)];
      assert.ok(verifiesOver(a.bytes, a.headers.get('x-tape-signature')!, keys));
      assert.equal(verifiesOver(b.bytes, a.headers.get('x-tape-signature')!, keys), false);
    });
  });
});
