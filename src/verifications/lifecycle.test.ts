import assert from 'node:assert/strict';
import request from 'supertest';
import { randomUUID } from 'node:crypto';
import { AccountsRepository } from '../accounts/accounts-repository.ts';
import * as admin from '../accounts/lender-admin.ts';
import { adminContext } from '../admin/admin-context.ts';
import { startService, type Service } from '../service.ts';
import { ManualClock } from '../platform/clock.ts';
import { loadConfig } from '../platform/config.ts';
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';
import { createLogger } from '../platform/logger.ts';
import { IllegalTransition } from './state-machine.ts';
import { moveVerification } from './verification-lifecycle.ts';

const DAY = 24 * 60 * 60 * 1000;
const DELAY = 5000;

for (const factory of testDatabases()) {
  describe(`verification lifecycle on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let service: Service;
    let clock: ManualClock;
    let key: string;
    let otherKey: string;
    const env = (mode = 'sandbox') => ({
      DATABASE_URL: testDb.url,
      VALIDATE_RESPONSES: '1',
      SANDBOX_COMPLETE_DELAY_MS: String(DELAY),
      SERVICE_MODE: mode,
      // A production deployment with YouTube configured (never called here): one that can connect
      // nothing refuses every creation (P32).
      ...(mode === 'production' ? { ENCRYPTION_KEY: 'c'.repeat(64), GOOGLE_CLIENT_ID: 'google-client', GOOGLE_CLIENT_SECRET: 'google-secret' } : {}),
    });
    const logger = createLogger({ level: 'silent' });

    const create = (body: object, idempotencyKey = randomUUID(), apiKey = key) =>
      request(service.app).post('/api/v1/verifications').auth(apiKey, { type: 'bearer' }).set('Idempotency-Key', idempotencyKey).send(body);
    const get = (id: string, apiKey = key) => request(service.app).get(`/api/v1/verifications/${id}`).auth(apiKey, { type: 'bearer' });
    const tape = (id: string, version?: string) =>
      request(service.app)
        .get(`/api/v1/verifications/${id}/tape${version ? `?schema_version=${version}` : ''}`)
        .auth(key, { type: 'bearer' });
    const advance = async (ms: number) => {
      clock.advance(ms);
      await service.jobs.runDue();
    };

    before(async () => {
      testDb = await factory.create();
      clock = new ManualClock('2026-11-21T10:00:00.000Z');
      service = await startService(loadConfig(env()), logger, { clock });
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

    it('creates a real creator in pending_consent with an unguessable consent URL and a 7-day session', async () => {
      const response = await create({ obligor_reference: 'obligor-4411', creator_platforms: ['youtube', 'stripe'] });
      assert.equal(response.status, 201, response.text);
      const v = response.body;
      assert.equal(v.status, 'pending_consent');
      assert.equal(v.lender_name, 'Northwind Capital');
      assert.equal(v.product_type, 'rbf');
      assert.equal(new Date(v.expires_at).getTime() - new Date(v.created_at).getTime(), 7 * DAY);
      assert.ok(!v.consent_url.includes(v.verification_id));
      assert.match(v.consent_url, /\/consent\/[A-Za-z0-9]{40,}$/);
      assert.deepEqual((await get(v.verification_id)).body, v);
    });

    it('dates a creation when it is written, after its wait for the SQLite writer, not when it arrived', async function () {
      if (factory.name !== 'sqlite') return this.skip();
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let begun!: () => void;
      const holding = new Promise<void>((resolve) => (begun = resolve));
      // Another transaction holds the writer while the creation arrives.
      const holder = service.db.knex.transaction(async () => {
        begun();
        await held;
      });
      await holding;
      const arrivedAt = clock.now().getTime();
      const creating = create({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube'] }).then((response) => response);
      await new Promise((resolve) => setTimeout(resolve, 200));
      clock.advance(60_000);
      release();
      await holder;
      const { status, body: v } = await creating;
      assert.equal(status, 201);
      const writtenAt = new Date(arrivedAt + 60_000).toISOString();
      assert.deepEqual([v.created_at, v.updated_at, v.completed_at], [writtenAt, writtenAt, writtenAt]);
      const events = await service.db.knex('events').where({ verification_id: v.verification_id }).select('occurred_at');
      assert.deepEqual(
        events.map((e: { occurred_at: string }) => e.occurred_at),
        [writtenAt],
      );
    });

    it('expires a verification that waits 7 days for consent, with its event', async () => {
      const { body: v } = await create({ obligor_reference: 'obligor-expiry', creator_platforms: ['stripe'] });
      await advance(7 * DAY - 1000);
      assert.equal((await get(v.verification_id)).body.status, 'pending_consent');
      await advance(1000);
      const after = (await get(v.verification_id)).body;
      assert.equal(after.status, 'expired');
      const events = await service.verifications.eventsOf(v.verification_id);
      assert.deepEqual(
        events.map((e) => e.name),
        ['verification.expired'],
      );
      assert.equal((events[0]!.payload as { occurred_at: string }).occurred_at, after.updated_at);
    });

    it('replays the original answer for the same key and payload, and creates nothing', async () => {
      const idempotencyKey = randomUUID();
      const body = { obligor_reference: 'obligor-replay', creator_platforms: ['youtube'], product_type: 'term_loan' };
      const first = await create(body, idempotencyKey);
      const again = await create({ product_type: 'term_loan', creator_platforms: ['youtube'], obligor_reference: 'obligor-replay' }, idempotencyKey);
      assert.equal(again.status, 201);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(first.headers['idempotent-replayed'], undefined);
      assert.deepEqual(again.body, first.body);
      const count = await service.db.knex('verifications').where({ obligor_reference: 'obligor-replay' }).count({ n: '*' }).first();
      assert.equal(Number(count!.n), 1);
    });

    it('refuses the same key with another payload as duplicate_request', async () => {
      const idempotencyKey = randomUUID();
      await create({ obligor_reference: 'obligor-a', creator_platforms: ['youtube'] }, idempotencyKey);
      const response = await create({ obligor_reference: 'obligor-b', creator_platforms: ['youtube'] }, idempotencyKey);
      assert.equal(response.status, 409);
      assert.equal(response.body.error, 'duplicate_request');
    });

    it('scopes keys to the lender and frees them after 24 hours', async () => {
      const idempotencyKey = randomUUID();
      const body = { obligor_reference: 'obligor-ttl', creator_platforms: ['youtube'] };
      const first = await create(body, idempotencyKey);
      const otherLender = await create(body, idempotencyKey, otherKey);
      assert.equal(otherLender.status, 201);
      assert.notEqual(otherLender.body.verification_id, first.body.verification_id);
      clock.advance(DAY - 1000);
      assert.equal((await create(body, idempotencyKey)).headers['idempotent-replayed'], 'true');
      clock.advance(1000);
      const fresh = await create({ obligor_reference: 'obligor-other-payload', creator_platforms: ['stripe'] }, idempotencyKey);
      assert.equal(fresh.status, 201);
      assert.equal(fresh.headers['idempotent-replayed'], undefined);
      assert.notEqual(fresh.body.verification_id, first.body.verification_id);
    });

    it('creates exactly one verification for 30 concurrent requests with one key', async () => {
      const idempotencyKey = randomUUID();
      const body = { obligor_reference: 'obligor-concurrent', creator_platforms: ['youtube', 'stripe'] };
      const responses = await Promise.all(Array.from({ length: 30 }, () => create(body, idempotencyKey)));
      assert.deepEqual(new Set(responses.map((r) => r.status)), new Set([201]));
      assert.equal(new Set(responses.map((r) => r.body.verification_id)).size, 1);
      assert.equal(responses.filter((r) => r.headers['idempotent-replayed'] !== 'true').length, 1);
      const count = await service.db.knex('verifications').where({ obligor_reference: 'obligor-concurrent' }).count({ n: '*' }).first();
      assert.equal(Number(count!.n), 1);
    });

    it('completes a synthetic creator at once with its tape and event', async () => {
      const { body: v } = await create({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] });
      assert.equal(v.status, 'completed');
      assert.equal(v.completed_at, v.created_at);
      assert.equal(v.schema_version, '2.0.0');
      const t = await tape(v.verification_id);
      assert.equal(t.status, 200);
      assert.equal(t.body.eligibility.tier, 'prime');
      assert.equal(t.body.verification_id, v.verification_id);
      for (const version of ['1.0.0', '1.1.0', '1.2.0']) {
        const rendered = await tape(v.verification_id, version);
        assert.equal(rendered.status, 200, rendered.text);
        assert.equal(rendered.body.schema_version, version);
      }
      assert.deepEqual(
        (await service.verifications.eventsOf(v.verification_id)).map((e) => e.name),
        ['verification.completed'],
      );
    });

    it('re-scores a tape stored before its scoring input was kept when an overlay arrives, changing no figure', async () => {
      const { body: v } = await create({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] });
      const before = (await tape(v.verification_id)).body;
      await service.db.knex('tapes').where({ verification_id: v.verification_id }).update({ scoring_input: null });
      const overlay = await request(service.app)
        .post(`/api/v1/verifications/${v.verification_id}/overlays`)
        .auth(key, { type: 'bearer' })
        .send({ type: 'aml', provider: 'ComplyCheck', status: 'clear', observed_at: '2026-11-01T00:00:00Z' });
      assert.equal(overlay.status, 201, overlay.text);
      const after = (await tape(v.verification_id)).body;
      assert.deepEqual(after.platform_connections, before.platform_connections);
      assert.deepEqual(after.cashflow_summary, before.cashflow_summary);
      assert.deepEqual(after.eligibility.tier, before.eligibility.tier);
    });

    it("scores with the lender's own policy overrides (partner configuration)", async () => {
      const ctx = adminContext({ mode: 'sandbox' }, new AccountsRepository(service.db.knex), clock);
      const lender = await admin.createLender(ctx, { name: 'Strict Lender' });
      const strictKey = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
      await admin.setPolicy(ctx, { id: lender.id, productType: 'rbf', overrides: { prime_min_months: 60 } });
      const { body: v } = await create({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] }, randomUUID(), strictKey);
      const strictTape = await request(service.app).get(`/api/v1/verifications/${v.verification_id}/tape`).auth(strictKey, { type: 'bearer' });
      assert.equal(strictTape.body.eligibility.tier, 'standard', 'sixty months of history for prime demotes the 24-month creator');
    });

    it('answers 404 naming the status for the tape of a verification that is not completed', async () => {
      const { body: v } = await create({ obligor_reference: 'obligor-no-tape', creator_platforms: ['youtube'] });
      const response = await tape(v.verification_id);
      assert.equal(response.status, 404);
      assert.match(response.body.message, /pending_consent/);
    });

    it('answers 422 for a 2.0.0-only product type rendered at 1.x', async () => {
      const { body: v } = await create({ obligor_reference: 'demo-yt-mid', creator_platforms: ['youtube'], product_type: 'murabaha' });
      assert.equal((await tape(v.verification_id, '2.0.0')).status, 200);
      const old = await tape(v.verification_id, '1.1.0');
      assert.equal(old.status, 422);
      assert.equal(old.body.error, 'unprocessable');
    });

    const outcomes: Array<[string, string, string | null, string]> = [
      ['test-complete-', 'completed', null, 'verification.completed'],
      ['test-fail-', 'failed', 'platform_error', 'verification.failed'],
      ['test-revoke-', 'failed', 'consent_revoked', 'verification.failed'],
      ['test-timeout-', 'failed', 'timeout', 'verification.failed'],
    ];
    for (const [prefix, status, reason, event] of outcomes) {
      it(`moves ${prefix} through processing to ${status}${reason ? ` (${reason})` : ''} after the delay`, async () => {
        const { body: v } = await create({ obligor_reference: `${prefix}${randomUUID()}`, creator_platforms: ['youtube'] });
        assert.equal(v.status, 'pending_consent');
        await advance(DELAY / 2 - 1);
        assert.equal((await get(v.verification_id)).body.status, 'pending_consent');
        await advance(1);
        assert.equal((await get(v.verification_id)).body.status, 'processing');
        await advance(DELAY / 2);
        const done = (await get(v.verification_id)).body;
        assert.equal(done.status, status);
        assert.equal(done.failure_reason, reason);
        assert.equal(done.completed_at !== null, status === 'completed');
        assert.equal((await tape(v.verification_id)).status, status === 'completed' ? 200 : 404);
        assert.deepEqual(
          (await service.verifications.eventsOf(v.verification_id)).map((e) => e.name),
          [event],
        );
        const moves = await service.verifications.transitionsOf(v.verification_id);
        assert.deepEqual(
          moves.map((m) => `${m.from ?? '-'}>${m.to}`),
          ['->pending_consent', 'pending_consent>processing', `processing>${status}`],
        );
      });
    }

    it('expires test-expire- after the delay', async () => {
      const { body: v } = await create({ obligor_reference: 'test-expire-1', creator_platforms: ['stripe'] });
      await advance(DELAY);
      assert.equal((await get(v.verification_id)).body.status, 'expired');
    });

    it('refuses a move the state table does not allow, changing nothing', async () => {
      const { body: v } = await create({ obligor_reference: 'demo-yt-nano', creator_platforms: ['youtube'] });
      await assert.rejects(
        service.verifications.transaction(async (store) => {
          const record = (await store.lock(v.verification_id))!;
          await moveVerification(store, record, 'consent_expired', { at: clock.now() });
        }),
        IllegalTransition,
      );
      assert.equal((await get(v.verification_id)).body.status, 'completed');
    });

    it("refuses a failure whose reason is not its row's (the event's reason names the move), changing nothing", async () => {
      const { body: v } = await create({ obligor_reference: 'a-real-creator', creator_platforms: ['youtube'] });
      for (const reason of ['timeout', undefined] as const) {
        await assert.rejects(
          service.verifications.transaction(async (store) => {
            const record = (await store.lock(v.verification_id))!;
            await moveVerification(store, record, 'consent_declined', { at: clock.now(), reason });
          }),
          /consent_declined to failed with reason/,
        );
      }
      assert.equal((await get(v.verification_id)).body.status, 'pending_consent');
    });

    it('keeps another lender out of every verification endpoint', async () => {
      const { body: v } = await create({ obligor_reference: 'demo-stripe-micro', creator_platforms: ['stripe'] });
      assert.equal((await get(v.verification_id, otherKey)).status, 404);
      const foreignTape = await request(service.app).get(`/api/v1/verifications/${v.verification_id}/tape`).auth(otherKey, { type: 'bearer' });
      assert.equal(foreignTape.status, 404);
      assert.doesNotMatch(foreignTape.body.message, /completed/);
    });

    it('runs jobs that were due while the service was down, after a restart', async () => {
      const { body: v } = await create({ obligor_reference: 'test-complete-restart', creator_platforms: ['youtube'] });
      await service.close();
      clock.advance(DELAY);
      service = await startService(loadConfig(env()), logger, { clock });
      await service.jobs.runDue();
      await service.jobs.runDue();
      assert.equal((await get(v.verification_id)).body.status, 'completed');
    });

    it('treats synthetic names and test- prefixes as ordinary references in production', async () => {
      await service.close();
      // A database belongs to one kind of deployment (P27): production starts on a fresh one.
      await testDb.drop();
      testDb = await factory.create();
      service = await startService(loadConfig(env('production')), logger, { clock });
      const ctx = adminContext({ mode: 'production' }, new AccountsRepository(service.db.knex), clock);
      const lender = await admin.createLender(ctx, { name: 'Live Lender' });
      const liveKey = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
      for (const reference of ['demo_prime_multi', 'test-complete-live']) {
        const { body: v } = await create({ obligor_reference: reference, creator_platforms: ['youtube'] }, randomUUID(), liveKey);
        assert.equal(v.status, 'pending_consent');
        await advance(DELAY);
        assert.equal((await get(v.verification_id, liveKey)).body.status, 'pending_consent');
      }
    });
  });
}
