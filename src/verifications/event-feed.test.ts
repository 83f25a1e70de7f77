import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { AccountsRepository } from '../accounts/accounts-repository.ts';
import * as admin from '../accounts/lender-admin.ts';
import { ManualClock } from '../platform/clock.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { adminContext } from '../admin/admin-context.ts';
import { startService, type Service } from '../service.ts';
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

for (const factory of testDatabases()) {
  describe(`GET /events on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let service: Service;
    let clock: ManualClock;
    let key: string;
    let otherKey: string;
    /** The events made, oldest first: what each verification's move announced. */
    const made: Array<{ verificationId: string; event: string }> = [];

    const feed = (query: string, apiKey = key) => request(service.app).get(`/api/v1/events${query}`).auth(apiKey, { type: 'bearer' });
    const create = async (apiKey: string, obligorReference: string) => {
      const response = await request(service.app)
        .post('/api/v1/verifications')
        .auth(apiKey, { type: 'bearer' })
        .set('Idempotency-Key', randomUUID())
        .send({ obligor_reference: obligorReference, creator_platforms: ['youtube'] });
      assert.equal(response.status, 201, response.text);
      return response.body.verification_id as string;
    };

    before(async () => {
      testDb = await factory.create();
      clock = new ManualClock('2026-11-21T10:00:00.000Z');
      service = await startService(
        loadConfig({ DATABASE_URL: testDb.url, VALIDATE_RESPONSES: '1', SERVICE_MODE: 'sandbox' }),
        createLogger({ level: 'silent' }),
        { clock },
      );
      const ctx = adminContext({ mode: 'sandbox' }, new AccountsRepository(service.db.knex), clock);
      const lender = await admin.createLender(ctx, { name: 'Northwind Capital' });
      key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
      const other = await admin.createLender(ctx, { name: 'Other Lender' });
      otherKey = (await admin.createKey(ctx, { lenderId: other.id, role: 'lender' })).apiKey;
      for (let i = 0; i < 3; i++) {
        clock.advance(MINUTE);
        made.push({ verificationId: await create(key, 'demo_prime_multi'), event: 'verification.completed' });
      }
      clock.advance(MINUTE);
      const cancelled = await create(key, 'obligor-to-cancel');
      const cancel = await request(service.app).post(`/api/v1/verifications/${cancelled}/cancel`).auth(key, { type: 'bearer' });
      assert.equal(cancel.status, 200, cancel.text);
      made.push({ verificationId: cancelled, event: 'verification.cancelled' });
      // Another lender's event never shows.
      await create(otherKey, 'demo_prime_multi');
    });
    after(async () => {
      await service.close();
      await testDb.drop();
    });

    it('lists the lender’s events newest first, each as its webhook carries it', async () => {
      const response = await feed('');
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.has_more, false);
      const newestFirst = [...made].reverse();
      assert.deepEqual(
        response.body.data.map((e: { verification_id: string; event: string }) => ({ verificationId: e.verification_id, event: e.event })),
        newestFirst,
      );
      // The bytes stored for the webhook, the same event id and body.
      const stored = await service.db
        .knex('events')
        .whereIn(
          'verification_id',
          made.map((m) => m.verificationId),
        )
        .orderBy('sequence', 'desc')
        .select('payload');
      assert.deepEqual(
        response.body.data,
        stored.map((row: { payload: string }) => JSON.parse(row.payload)),
      );
    });

    it('filters by type and by verification, and pages with starting_after', async () => {
      const completed = await feed('?type=verification.completed');
      assert.deepEqual(
        completed.body.data.map((e: { verification_id: string }) => e.verification_id),
        made
          .filter((m) => m.event === 'verification.completed')
          .map((m) => m.verificationId)
          .reverse(),
      );
      const one = await feed(`?verification_id=${made[1]!.verificationId}`);
      assert.deepEqual(
        one.body.data.map((e: { verification_id: string }) => e.verification_id),
        [made[1]!.verificationId],
      );
      const first = await feed('?limit=3');
      assert.equal(first.body.has_more, true);
      const second = await feed(`?limit=3&starting_after=${first.body.data[2].event_id}`);
      assert.equal(second.body.has_more, false);
      assert.deepEqual(
        [...first.body.data, ...second.body.data].map((e: { verification_id: string }) => e.verification_id),
        made.map((m) => m.verificationId).reverse(),
      );
    });

    it('refuses a cursor that is not one of the lender’s events with 400 validation_error', async () => {
      const others = await feed('', otherKey);
      assert.equal(others.body.data.length, 1);
      for (const cursor of ['evt_neverissued', others.body.data[0].event_id]) {
        const response = await feed(`?starting_after=${cursor}`);
        assert.equal(response.status, 400, response.text);
        assert.equal(response.body.error, 'validation_error', cursor);
      }
    });

    it('reaches back 30 days and no further', async () => {
      clock.advance(30 * DAY - 10 * MINUTE);
      assert.equal((await feed('')).body.data.length, made.length);
      clock.advance(20 * MINUTE);
      const response = await feed('');
      assert.equal(response.status, 200);
      assert.deepEqual(response.body.data, []);
      // The verifications themselves are still there.
      assert.equal((await request(service.app).get(`/api/v1/verifications/${made[0]!.verificationId}`).auth(key, { type: 'bearer' })).status, 200);
    });
  });
}
