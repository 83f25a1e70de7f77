import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import request from 'supertest';
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';
import { AccountsRepository } from '../accounts/accounts-repository.ts';
import * as admin from '../accounts/lender-admin.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { adminContext } from '../admin/admin-context.ts';
import { startService, type Service } from '../service.ts';

/** The consent link's token lets whoever holds it act as the creator: it is kept sealed, never in plain text (issue: hardening). */
for (const factory of testDatabases()) {
  describe(`the consent link at rest and in logs on ${factory.name}`, function () {
    this.timeout(30_000);
    let testDb: TestDatabase;
    let service: Service;
    let key: string;
    const logLines: string[] = [];

    before(async () => {
      testDb = await factory.create();
      const capture = new Writable({
        write(chunk, _encoding, done) {
          logLines.push(String(chunk));
          done();
        },
      });
      const config = loadConfig({ DATABASE_URL: testDb.url, VALIDATE_RESPONSES: '1' });
      service = await startService(config, createLogger({ level: 'debug', destination: capture }));
      const ctx = adminContext(config, new AccountsRepository(service.db.knex));
      const lender = await admin.createLender(ctx, { name: 'Sealed Links Lending' });
      key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
    });
    after(async () => {
      await service.close();
      await testDb.drop();
    });

    it('stores neither the token nor the URL in plain text, yet shows the URL on creation, on reads and on an idempotent replay', async () => {
      const idempotencyKey = randomUUID();
      const obligorReference = `obligor-${randomUUID()}`;
      const create = () =>
        request(service.app)
          .post('/api/v1/verifications')
          .auth(key, { type: 'bearer' })
          .set('Idempotency-Key', idempotencyKey)
          .send({ obligor_reference: obligorReference, creator_platforms: ['youtube'] });
      const created = await create();
      assert.equal(created.status, 201, created.text);
      const url = created.body.consent_url as string;
      const token = url.split('/').pop()!;
      assert.match(token, /^[A-Za-z0-9]{40,}$/);

      const stored = [];
      for (const table of ['verifications', 'idempotency_keys', 'events', 'jobs']) stored.push(JSON.stringify(await service.db.knex(table).select()));
      assert.ok(!stored.join('\n').includes(token), 'the consent token is stored in plain text');

      const read = await request(service.app).get(`/api/v1/verifications/${created.body.verification_id}`).auth(key, { type: 'bearer' });
      assert.equal(read.body.consent_url, url);
      const replay = await create();
      assert.equal(replay.headers['idempotent-replayed'], 'true', replay.text);
      assert.deepEqual(replay.body, created.body);

      const page = await request(service.app).get(new URL(url).pathname);
      assert.equal(page.status, 200);
      assert.ok(!logLines.join('').includes(token), 'the consent token was logged');
      assert.ok(logLines.join('').includes('/consent/:token'), 'the consent page request was logged, redacted');
    });
  });
}

for (const factory of testDatabases()) {
  describe(`data stored by an earlier version, caught up at the next start on ${factory.name}`, function () {
    this.timeout(30_000);

    it('seals plain consent links and encrypts plain account emails once, keeping the URL the lender sees', async () => {
      const testDb = await factory.create();
      const config = loadConfig({ DATABASE_URL: testDb.url });
      const first = await startService(config, createLogger({ level: 'silent' }));
      const ctx = adminContext(config, new AccountsRepository(first.db.knex));
      const lender = await admin.createLender(ctx, { name: 'Earlier Version Lending' });
      const key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
      const created = await request(first.app)
        .post('/api/v1/verifications')
        .auth(key, { type: 'bearer' })
        .set('Idempotency-Key', randomUUID())
        .send({ obligor_reference: `obligor-${randomUUID()}`, creator_platforms: ['youtube'] });
      const id = created.body.verification_id as string;
      const url = created.body.consent_url as string;
      // As the earlier version wrote them: the whole URL and the email in plain text.
      await first.db.knex('verifications').where({ id }).update({ consent_url: url, consent_token_sealed: null });
      await first.db.knex('platform_connections').where({ verification_id: id }).update({ account_email: 'Earlier@Example.org' });
      await first.db.knex('service_settings').where('name', 'like', 'catch_up:%').delete();
      await first.close();

      const second = await startService(config, createLogger({ level: 'silent' }));
      const [row] = await second.db.knex('verifications').where({ id });
      const [connection] = await second.db.knex('platform_connections').where({ verification_id: id });
      assert.equal(row.consent_url, '');
      assert.ok(row.consent_token_sealed && !String(row.consent_token_sealed).includes(url.split('/').pop()!));
      assert.equal(connection.account_email, null);
      assert.ok(connection.account_email_ciphertext && connection.account_email_index);
      const read = await request(second.app).get(`/api/v1/verifications/${id}`).auth(key, { type: 'bearer' });
      assert.equal(read.body.consent_url, url);
      await second.close();
      await testDb.drop();
    });
  });
}
