import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet } from 'jose';
import request from 'supertest';
import { AccountsRepository } from '../accounts/accounts-repository.ts';
import * as admin from '../accounts/lender-admin.ts';
import { ManualClock } from '../platform/clock.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { adminContext } from '../admin/admin-context.ts';
import { startService, type Service } from '../service.ts';
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';
import { SigningKeysRepository } from './signing-keys-repository.ts';
import { createSigningKey, KEY_REFRESH_MS, retireSigningKey, SigningKeyError } from './tape-signer.ts';

/** supertest keeps the body as it came off the wire. */
function rawBytes(res: request.Response, done: (error: Error | null, body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (chunk: Buffer) => chunks.push(chunk));
  res.on('end', () => done(null, Buffer.concat(chunks)));
}

/** What a verifier does (docs/signed-tapes.md): the body's base64url between the two dots, then an ordinary compact JWS check. */
async function verifyTape(bytes: Uint8Array, detached: string, jwks: JSONWebKeySet): Promise<string> {
  const [header, payload, signature] = detached.split('.');
  assert.equal(payload, '', 'the payload part of a detached JWS is empty');
  const { protectedHeader } = await compactVerify(`${header}.${Buffer.from(bytes).toString('base64url')}.${signature}`, createLocalJWKSet(jwks), {
    algorithms: ['ES256'],
  });
  return protectedHeader.kid!;
}

for (const factory of testDatabases()) {
  describe(`signed Risk Tapes (P26) on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let service: Service;
    let clock: ManualClock;
    let key: string;
    let verificationId: string;
    const keys = () => new SigningKeysRepository(service.db.knex);

    const tape = async (schemaVersion = '2.0.0') => {
      const response = await request(service.app)
        .get(`/api/v1/verifications/${verificationId}/tape?schema_version=${schemaVersion}`)
        .auth(key, { type: 'bearer' })
        .buffer(true)
        .parse(rawBytes);
      assert.equal(response.status, 200, String(response.body));
      return { bytes: response.body as Buffer, signature: response.get('X-Tape-Signature')! };
    };
    const jwks = async () => {
      const response = await request(service.app).get('/.well-known/jwks.json');
      assert.equal(response.status, 200, response.text);
      return response;
    };

    before(async () => {
      testDb = await factory.create();
      clock = new ManualClock('2026-11-25T10:00:00.000Z');
      service = await startService(
        loadConfig({ DATABASE_URL: testDb.url, VALIDATE_RESPONSES: '1', SERVICE_MODE: 'sandbox' }),
        createLogger({ level: 'silent' }),
        { clock },
      );
      const ctx = adminContext({ mode: 'sandbox' }, new AccountsRepository(service.db.knex), clock);
      const lender = await admin.createLender(ctx, { name: 'Northwind Capital' });
      key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
      const created = await request(service.app)
        .post('/api/v1/verifications')
        .auth(key, { type: 'bearer' })
        .set('Idempotency-Key', randomUUID())
        .send({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] });
      assert.equal(created.status, 201, created.text);
      verificationId = created.body.verification_id;
    });
    after(async () => {
      await service.close();
      await testDb.drop();
    });

    it('start-up creates one key, stored encrypted; the JWK Set is public, cacheable, and has no private part', async () => {
      const rows = await keys().listAll();
      assert.equal(rows.length, 1);
      assert.match(rows[0]!.privateJwkCiphertext, /^v1\./);
      assert.doesNotMatch(rows[0]!.privateJwkCiphertext, /"d"/);
      const response = await jwks();
      assert.equal(response.get('Cache-Control'), 'public, max-age=300');
      assert.match(response.get('Content-Type')!, /^application\/json/);
      assert.deepEqual(
        response.body.keys.map((k: Record<string, unknown>) => Object.keys(k).sort()),
        [['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']],
      );
      assert.equal(response.body.keys[0].kid, rows[0]!.kid);
    });

    it('every schema version: the header verifies over the exact bytes sent; one byte changed does not', async () => {
      const published = (await jwks()).body as JSONWebKeySet;
      for (const version of ['1.0.0', '1.1.0', '1.2.0', '2.0.0']) {
        const { bytes, signature } = await tape(version);
        assert.equal(JSON.parse(bytes.toString('utf8')).schema_version, version);
        assert.equal(await verifyTape(bytes, signature, published), published.keys[0]!.kid);
        const altered = Buffer.from(bytes);
        const at = altered.indexOf('"schema_version"') + 2;
        altered[at] = altered[at]! ^ 0x01;
        await assert.rejects(verifyTape(altered, signature, published), /signature verification failed/);
      }
    });

    it('the same bytes get the remembered signature (ECDSA would otherwise differ each time)', async () => {
      const first = await tape();
      const second = await tape();
      assert.deepEqual(second.bytes, first.bytes);
      assert.equal(second.signature, first.signature);
    });

    it('rotation: the new key is published at once, signs once published for a refresh period; the old key verifies until retired', async () => {
      const before = await tape();
      const oldKid = decodeProtectedHeader(before.signature).kid!;
      clock.advance(1000);
      const rotated = await createSigningKey(keys(), service.encryptionKey, clock.now());
      service.tapeSigner.refresh();
      assert.deepEqual(
        (await jwks()).body.keys.map((k: { kid: string }) => k.kid),
        [oldKid, rotated.kid],
        'published at once, the old key still signing (listed first)',
      );
      assert.equal(decodeProtectedHeader((await tape()).signature).kid, oldKid);
      await assert.rejects(retireSigningKey(keys(), oldKid, clock.now()), SigningKeyError, 'the key signing now cannot be retired');

      clock.advance(KEY_REFRESH_MS);
      const after = await tape();
      assert.equal(decodeProtectedHeader(after.signature).kid, rotated.kid);
      const published = (await jwks()).body as JSONWebKeySet;
      assert.deepEqual(
        published.keys.map((k) => k.kid),
        [rotated.kid, oldKid],
      );
      assert.equal(await verifyTape(before.bytes, before.signature, published), oldKid, 'a tape signed before the rotation still verifies');
      assert.equal(await verifyTape(after.bytes, after.signature, published), rotated.kid);

      await assert.rejects(retireSigningKey(keys(), rotated.kid, clock.now()), /newest key/);
      await retireSigningKey(keys(), oldKid, clock.now());
      service.tapeSigner.refresh();
      const remaining = (await jwks()).body as JSONWebKeySet;
      assert.deepEqual(
        remaining.keys.map((k) => k.kid),
        [rotated.kid],
      );
      await assert.rejects(verifyTape(before.bytes, before.signature, remaining), /no applicable key found/);
    });
  });
}
