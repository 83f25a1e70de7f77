import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import request from 'supertest';
import { AccountsRepository } from '../accounts/accounts-repository.ts';
import * as admin from '../accounts/lender-admin.ts';
import { ManualClock } from '../platform/clock.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { adminContext } from '../admin/admin-context.ts';
import { startService, type Service } from '../service.ts';
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';

/**
 * A write fails where it is written (docs/persistence.md): a creation whose INSERT of its transition
 * row is refused reports that INSERT (on PostgreSQL, the creation's one statement that holds it), its
 * table and its constraint, not a later statement's.
 */
for (const factory of testDatabases()) {
  describe(`a creation whose INSERT fails, on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let service: Service;
    let key: string;
    const logged: Array<{ level: number; err?: { message?: string; table?: string; constraint?: string } }> = [];

    before(async () => {
      testDb = await factory.create();
      const destination = new Writable({
        write(chunk: Buffer, _encoding, done) {
          for (const line of chunk.toString().split('\n')) if (line.trim()) logged.push(JSON.parse(line) as (typeof logged)[number]);
          done();
        },
      });
      const clock = new ManualClock('2026-11-21T10:00:00.000Z');
      service = await startService(loadConfig({ DATABASE_URL: testDb.url, SERVICE_MODE: 'sandbox' }), createLogger({ level: 'error', destination }), { clock });
      const ctx = adminContext({ mode: 'sandbox' }, new AccountsRepository(service.db.knex), clock);
      const lender = await admin.createLender(ctx, { name: 'Refused Insert Bank' });
      key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
      // At most one transition into each status: the second creation's transition row is refused.
      await service.db.knex.raw('create unique index test_one_transition_per_status on verification_transitions (to_status)');
    });
    after(async () => {
      await service.close();
      await testDb.drop();
    });

    const create = () =>
      request(service.app)
        .post('/api/v1/verifications')
        .auth(key, { type: 'bearer' })
        .set('Idempotency-Key', randomUUID())
        .send({ obligor_reference: `refused-${randomUUID()}`, creator_platforms: ['youtube'] });

    it('names the INSERT, its table and its constraint, and keeps nothing of the creation', async () => {
      const first = await create();
      assert.equal(first.status, 201, JSON.stringify(logged));
      const before = await service.db.knex('verifications').count({ n: '*' }).first();
      const refused = await create();
      assert.equal(refused.status, 500, refused.text);
      const error = logged.find((line) => line.err?.message?.includes('verification_transitions'))?.err;
      assert.ok(error, JSON.stringify(logged));
      if (factory.name === 'postgres') {
        // The creation's rows are one statement there (docs/persistence.md): the error is that
        // statement's, and PostgreSQL names the table and constraint of the row it refused.
        assert.match(error.message!, /^with "verification" as \(insert into "verifications"[^]* insert into "verification_transitions"/);
        assert.equal(error.table, 'verification_transitions');
        assert.equal(error.constraint, 'test_one_transition_per_status');
      } else {
        assert.match(error.message!, /^insert into "verification_transitions"/);
        assert.match(error.message!, /UNIQUE constraint failed: verification_transitions\.to_status/);
      }
      const after = await service.db.knex('verifications').count({ n: '*' }).first();
      assert.equal(Number(after?.n), Number(before?.n));
    });
  });
}
