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

const DAY = 24 * 60 * 60 * 1000;
const DELAY = 5000;

for (const factory of testDatabases()) {
  describe(`POST /verifications/{id}/cancel on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let service: Service;
    let clock: ManualClock;
    let key: string;
    let otherKey: string;

    const create = async (reference: string) => {
      const response = await request(service.app)
        .post('/api/v1/verifications')
        .auth(key, { type: 'bearer' })
        .set('Idempotency-Key', randomUUID())
        .send({ obligor_reference: reference, creator_platforms: ['youtube', 'stripe'], lender_name: 'Northwind <Capital>' });
      assert.equal(response.status, 201, response.text);
      return response.body as { verification_id: string; status: string; consent_url: string };
    };
    const cancel = (id: string, apiKey = key) => request(service.app).post(`/api/v1/verifications/${id}/cancel`).auth(apiKey, { type: 'bearer' });
    const get = (id: string) => request(service.app).get(`/api/v1/verifications/${id}`).auth(key, { type: 'bearer' });
    const consentPath = (url: string) => new URL(url).pathname;

    before(async () => {
      testDb = await factory.create();
      clock = new ManualClock('2026-11-21T10:00:00.000Z');
      service = await startService(
        loadConfig({ DATABASE_URL: testDb.url, VALIDATE_RESPONSES: '1', SERVICE_MODE: 'sandbox', SANDBOX_COMPLETE_DELAY_MS: String(DELAY) }),
        createLogger({ level: 'silent' }),
        { clock },
      );
      const ctx = adminContext({ mode: 'sandbox' }, new AccountsRepository(service.db.knex), clock);
      const lender = await admin.createLender(ctx, { name: 'Northwind Capital' });
      key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
      const other = await admin.createLender(ctx, { name: 'Other Lender' });
      otherKey = (await admin.createKey(ctx, { lenderId: other.id, role: 'lender' })).apiKey;
    });
    after(async () => {
      await service.close();
      await testDb.drop();
    });

    it('moves a pending_consent verification to cancelled, with its transition and one verification.cancelled event', async () => {
      const v = await create('obligor-cancel-1');
      clock.advance(1000);
      const response = await cancel(v.verification_id);
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.status, 'cancelled');
      assert.equal(response.body.updated_at, clock.now().toISOString());
      assert.deepEqual((await get(v.verification_id)).body, response.body);
      const transitions = await service.verifications.transitionsOf(v.verification_id);
      assert.deepEqual(
        transitions.map((t) => [t.from, t.trigger, t.to]),
        [
          [null, 'created', 'pending_consent'],
          ['pending_consent', 'cancelled_by_lender', 'cancelled'],
        ],
      );
      const events = await service.verifications.eventsOf(v.verification_id);
      assert.equal(events.length, 1);
      assert.deepEqual(events[0]!.payload, {
        event: 'verification.cancelled',
        event_id: events[0]!.id,
        verification_id: v.verification_id,
        obligor_reference: 'obligor-cancel-1',
        occurred_at: clock.now().toISOString(),
        data: { verification_id: v.verification_id, obligor_reference: 'obligor-cancel-1', status: 'cancelled' },
      });
    });

    it('a second cancel answers the cancelled verification again and emits nothing more', async () => {
      const v = await create('obligor-cancel-2');
      const first = await cancel(v.verification_id);
      clock.advance(1000);
      const second = await cancel(v.verification_id);
      assert.equal(second.status, 200, second.text);
      assert.deepEqual(second.body, first.body);
      assert.equal((await service.verifications.eventsOf(v.verification_id)).length, 1);
    });

    it('nothing moves a cancelled verification afterwards: not the 7-day expiry, not a sandbox scenario', async () => {
      const real = await create('obligor-cancel-3');
      const scenario = await create('test-complete-cancel');
      await cancel(real.verification_id);
      await cancel(scenario.verification_id);
      clock.advance(8 * DAY);
      await service.jobs.runDue();
      assert.equal((await get(real.verification_id)).body.status, 'cancelled');
      assert.equal((await get(scenario.verification_id)).body.status, 'cancelled');
    });

    it('refuses other states with 422 unprocessable naming the state', async () => {
      const synthetic = await create('demo_prime_multi');
      assert.equal(synthetic.status, 'completed');
      const response = await cancel(synthetic.verification_id);
      assert.equal(response.status, 422, response.text);
      assert.equal(response.body.error, 'unprocessable');
      assert.match(response.body.message, /completed/);
      const expiring = await create('obligor-cancel-expire');
      clock.advance(7 * DAY);
      await service.jobs.runDue();
      assert.equal((await cancel(expiring.verification_id)).body.error, 'unprocessable');
      assert.equal((await get(expiring.verification_id)).body.status, 'expired');
    });

    it("an unknown id or another lender's verification is 404, and the other lender cannot cancel it", async () => {
      assert.equal((await cancel('vrf_doesnotexist0000000')).status, 404);
      const v = await create('obligor-cancel-4');
      const response = await cancel(v.verification_id, otherKey);
      assert.equal(response.status, 404, response.text);
      assert.equal(response.body.error, 'not_found');
      assert.equal((await get(v.verification_id)).body.status, 'pending_consent');
    });

    it('the consent link then says the lender withdrew the request (410), without connect buttons, and connecting is refused', async () => {
      const v = await create('obligor-cancel-5');
      const open = await request(service.app).get(consentPath(v.consent_url));
      assert.equal(open.status, 200);
      assert.match(open.text, /connect\/youtube/);
      await cancel(v.verification_id);
      const page = await request(service.app).get(consentPath(v.consent_url));
      assert.equal(page.status, 410);
      assert.match(page.headers['content-type'] ?? '', /text\/html/);
      assert.match(page.text, /The lender withdrew this request/);
      assert.match(page.text, /Northwind &lt;Capital&gt;/, 'the lender name is escaped');
      assert.doesNotMatch(page.text, /connect\/|<form|<button/i);
      const connect = await request(service.app)
        .post(`${consentPath(v.consent_url)}/connect/youtube`)
        .type('form')
        .send({});
      assert.equal(connect.status, 410);
      assert.match(connect.text, /withdrew/);
    });
  });
}
