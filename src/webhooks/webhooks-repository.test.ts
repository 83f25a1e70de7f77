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
import { assertReadsIndex, planOf } from '../../test/support/query-plan.ts';
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';
import { hotStatementsMade } from '../platform/db/hot-statements.ts';
import { WebhooksRepository, type AttemptRecord } from './webhooks-repository.ts';

for (const factory of testDatabases()) {
  describe(`webhook delivery bookkeeping on ${factory.name}`, function () {
    this.timeout(30_000);
    let testDb: TestDatabase;
    let service: Service;
    let webhooks: WebhooksRepository;
    const clock = new ManualClock('2026-11-21T10:00:00.000Z');

    before(async () => {
      testDb = await factory.create();
      const config = loadConfig({ DATABASE_URL: testDb.url, WEBHOOK_ALLOW_PRIVATE_TARGETS: '1', LOG_LEVEL: 'silent' });
      // The delivery worker is not started: this test claims and records as a worker would.
      service = await startService(config, createLogger({ level: 'silent' }), { clock });
      webhooks = new WebhooksRepository(service.db.knex, service.db.dialect);
    });
    after(async () => {
      await service.close();
      await testDb.drop();
    });

    /** A new lender's API, as its lender key calls it. */
    const lenderApi = async (name: string) => {
      const ctx = adminContext({ mode: 'sandbox' }, new AccountsRepository(service.db.knex), clock);
      const lender = await admin.createLender(ctx, { name });
      const { apiKey } = await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' });
      return (path: string, body: object, headers: Record<string, string> = {}) =>
        request(service.app).post(`/api/v1${path}`).auth(apiKey, { type: 'bearer' }).set(headers).send(body);
    };
    /** Synthetic creators complete at creation: each makes one delivery per subscribed endpoint. */
    const createCompleted = async (api: Awaited<ReturnType<typeof lenderApi>>, count: number) => {
      for (let i = 0; i < count; i++) {
        const created = await api(
          '/verifications',
          { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] },
          { 'idempotency-key': randomUUID() },
        );
        assert.equal(created.status, 201);
      }
    };

    it('records a batch of attempts in place, each delivery moved to its own outcome, and stands aside where another worker took over', async () => {
      const api = await lenderApi('Bookkeeping Lender');
      assert.equal((await api('/webhooks', { url: 'https://127.0.0.1:9/hook', events: ['verification.completed'] })).status, 201);
      await createCompleted(api, 4);
      const due = await webhooks.claimDue('worker-a', clock.now(), 10, 60_000);
      assert.equal(due.length, 4);
      const [succeeded, retried, failed, takenOver] = due.map((d) => d.id) as [string, string, string, string];
      await service.db.knex('webhook_deliveries').where({ id: takenOver }).update({ locked_by: 'worker-b' });

      const at = (seconds: number) => new Date(clock.now().getTime() + seconds * 1000).toISOString();
      const record = (deliveryId: string, statusCode: number, outcome: AttemptRecord['outcome']): AttemptRecord => ({
        deliveryId,
        attempt: { attempt: 1, attemptedAt: outcome.firstAttemptAt, statusCode, durationMs: 5, error: null, responseSnippet: null },
        outcome,
      });
      await webhooks.recordAttempts('worker-a', [
        record(succeeded, 200, { status: 'succeeded', firstAttemptAt: at(1), nextAttemptAt: null }),
        record(retried, 503, { status: 'pending', firstAttemptAt: at(2), nextAttemptAt: at(62) }),
        record(failed, 410, { status: 'failed', firstAttemptAt: at(3), nextAttemptAt: null }),
        record(takenOver, 200, { status: 'succeeded', firstAttemptAt: at(4), nextAttemptAt: null }),
      ]);

      const rows = await service.db
        .knex('webhook_deliveries')
        .whereIn('id', [succeeded, retried, failed, takenOver])
        .select('id', 'status', 'attempts', 'first_attempt_at', 'next_attempt_at', 'locked_by', 'locked_until');
      const byId = new Map(rows.map(({ id, ...row }) => [id, { ...row, attempts: Number(row.attempts) }]));
      assert.deepEqual(byId.get(succeeded), {
        status: 'succeeded',
        attempts: 1,
        first_attempt_at: at(1),
        next_attempt_at: null,
        locked_by: null,
        locked_until: null,
      });
      assert.deepEqual(byId.get(retried), {
        status: 'pending',
        attempts: 1,
        first_attempt_at: at(2),
        next_attempt_at: at(62),
        locked_by: null,
        locked_until: null,
      });
      assert.deepEqual(byId.get(failed), {
        status: 'failed',
        attempts: 1,
        first_attempt_at: at(3),
        next_attempt_at: null,
        locked_by: null,
        locked_until: null,
      });
      const untouched = byId.get(takenOver)!;
      assert.deepEqual([untouched.status, untouched.attempts, untouched.first_attempt_at, untouched.locked_by], ['sending', 0, null, 'worker-b']);
    });

    it('puts deferred deliveries back as they were, due later with no attempt spent, and stands aside where another worker took over', async () => {
      const api = await lenderApi('Deferring Lender');
      const registered = await api('/webhooks', { url: 'https://127.0.0.1:9/deferred', events: ['verification.completed'] });
      assert.equal(registered.status, 201);
      await createCompleted(api, 3);
      const due = (await webhooks.claimDue('worker-a', clock.now(), 100, 60_000)).filter((d) => d.webhookId === registered.body.webhook_id);
      assert.equal(due.length, 3);
      const [sent, deferred, takenOver] = due.map((d) => d.id) as [string, string, string];
      await service.db.knex('webhook_deliveries').where({ id: takenOver }).update({ locked_by: 'worker-b' });

      const at = (seconds: number) => new Date(clock.now().getTime() + seconds * 1000).toISOString();
      await webhooks.recordAttempts(
        'worker-a',
        [
          {
            deliveryId: sent,
            attempt: { attempt: 1, attemptedAt: at(1), statusCode: 200, durationMs: 5, error: null, responseSnippet: null },
            outcome: { status: 'succeeded', firstAttemptAt: at(1), nextAttemptAt: null },
          },
        ],
        { deliveryIds: [deferred, takenOver], until: at(10) },
      );

      const rows = await service.db
        .knex('webhook_deliveries')
        .whereIn('id', [sent, deferred, takenOver])
        .select('id', 'status', 'attempts', 'first_attempt_at', 'next_attempt_at', 'locked_by', 'locked_until');
      const byId = new Map(rows.map(({ id, ...row }) => [id, { ...row, attempts: Number(row.attempts) }]));
      assert.equal(byId.get(sent)?.status, 'succeeded');
      assert.deepEqual(byId.get(deferred), {
        status: 'pending',
        attempts: 0,
        first_attempt_at: null,
        next_attempt_at: at(10),
        locked_by: null,
        locked_until: null,
      });
      const untouched = byId.get(takenOver)!;
      assert.deepEqual([untouched.status, untouched.locked_by], ['sending', 'worker-b']);
      const attempts = await service.db.knex('webhook_delivery_attempts').whereIn('delivery_id', [sent, deferred]).select('delivery_id');
      assert.deepEqual(
        attempts.map((a) => a.delivery_id),
        [sent],
      );
      const claimedNow = await webhooks.claimDue('worker-c', clock.now(), 100, 60_000);
      assert.ok(!claimedNow.some((d) => d.id === deferred), 'not due before its time');
      const claimedLater = await webhooks.claimDue('worker-c', new Date(at(10)), 100, 60_000);
      assert.ok(
        claimedLater.some((d) => d.id === deferred),
        'due again at its time',
      );
    });

    // An endpoint's delivery log costs the same at any size: each page is one range of an index in the log's order.
    for (const after of [undefined, { createdAt: '2026-11-21T10:00:00.000Z', id: '00000000-0000-4000-8000-000000000001' }]) {
      it(`the delivery log's page query (${after ? 'after a cursor' : 'newest page'}) searches an index in order: no table scan, no sort`, async () => {
        const { sql, bindings } = webhooks.deliveryLogSql('whk_plan', { after }, 21);
        const plan = await planOf(service.db.knex, factory.name, sql, bindings);
        assertReadsIndex(plan, factory.name, 'webhook_deliveries', 'webhook_deliveries_log_idx', { inOrder: true });
        // The cursor bounds the index range itself, rather than filtering what a longer range read.
        if (after && factory.name === 'sqlite') assert.match(plan, /\(webhook_id=\? AND \(created_at,id\)<\(\?,\?\)\)/, plan);
        if (after && factory.name === 'postgres') assert.match(plan, /Index Cond: .*ROW\(\(created_at\)::text, \(id\)::text\) < ROW/, plan);
        if (factory.name === 'postgres') assert.doesNotMatch(plan, /Filter:/, plan);
      });
    }

    const position = { createdAt: '2026-11-21T10:00:00.000Z', id: '00000000-0000-4000-8000-000000000001' };
    for (const [name, filter] of [
      ['before a cursor', { before: position }],
      ['several statuses', { status: ['pending', 'failed'] }],
      [
        'one status, a created range, after a cursor',
        { status: ['failed'], createdGte: '2026-11-01T00:00:00.000Z', createdLt: '2026-11-22T00:00:00.000Z', after: position },
      ],
    ] as const) {
      it(`the delivery log's page query (${name}) reads the log's index in order: no table scan, no sort`, async () => {
        const { sql, bindings } = webhooks.deliveryLogSql('whk_plan', { ...filter, status: 'status' in filter ? [...filter.status] : undefined }, 21);
        assertReadsIndex(await planOf(service.db.knex, factory.name, sql, bindings), factory.name, 'webhook_deliveries', 'webhook_deliveries_log_idx', {
          inOrder: true,
        });
      });
    }

    it("pages an endpoint's delivery log newest first through deliveries made at the same instant, and refuses another endpoint's cursor", async () => {
      const api = await lenderApi('Paging Lender');
      const endpoints: string[] = [];
      for (const hook of ['a', 'b']) {
        const registered = await api('/webhooks', { url: `https://127.0.0.1:9/${hook}`, events: ['verification.completed'] });
        assert.equal(registered.status, 201);
        endpoints.push(registered.body.webhook_id);
      }
      // The clock does not move: every delivery is made at one instant, and only ids order them.
      await createCompleted(api, 5);
      const [first, second] = endpoints as [string, string];
      const pageOf = async (webhookId: string, limit: number, query: Parameters<typeof webhooks.listDeliveries>[2] = {}) => {
        const page = await webhooks.listDeliveries(webhookId, limit, query);
        assert.ok(!('refused' in page), JSON.stringify(page));
        return page;
      };
      const whole = await pageOf(first, 100);
      assert.equal(whole.deliveries.length, 5);
      assert.equal(new Set(whole.deliveries.map((d) => d.createdAt)).size, 1);
      const ids = whole.deliveries.map((d) => d.id);
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => b.localeCompare(a)),
      );

      const pages: Array<{ ids: string[]; hasMore: boolean }> = [];
      let after: string | undefined;
      do {
        const page = await pageOf(first, 2, { startingAfter: after });
        pages.push({ ids: page.deliveries.map((d) => d.id), hasMore: page.hasMore });
        after = page.deliveries.at(-1)?.id;
      } while (pages.at(-1)!.hasMore);
      assert.deepEqual(pages, [
        { ids: ids.slice(0, 2), hasMore: true },
        { ids: ids.slice(2, 4), hasMore: true },
        { ids: ids.slice(4), hasMore: false },
      ]);

      // The other endpoint's newest delivery, as a cursor here: it would stand before most of this
      // log's deliveries if the cursor were looked up without the endpoint.
      const [otherNewest] = (await pageOf(second, 1)).deliveries;
      assert.ok(ids.some((id) => id < otherNewest!.id));
      assert.deepEqual(await webhooks.listDeliveries(first, 20, { startingAfter: otherNewest!.id }), { refused: 'starting_after' });
      assert.deepEqual(await webhooks.listDeliveries(first, 20, { endingBefore: otherNewest!.id }), { refused: 'ending_before' });

      // Backwards from the oldest: the nearest newer deliveries, each page newest first.
      const back: string[][] = [];
      let before = ids.at(-1)!;
      for (;;) {
        const page = await pageOf(first, 2, { endingBefore: before });
        back.unshift(page.deliveries.map((d) => d.id));
        before = page.deliveries[0]!.id;
        if (!page.hasMore) break;
      }
      assert.deepEqual(back.flat(), ids.slice(0, -1));
      // By state: all are pending here (the targets are never reached in this test).
      assert.deepEqual(
        (await pageOf(first, 100, { status: ['pending', 'failed'] })).deliveries.map((d) => d.id),
        ids,
      );
      assert.deepEqual((await pageOf(first, 100, { status: ['succeeded'] })).deliveries, []);
    });

    it("a creator's access report and erasure find their deliveries by verification through an index, not by reading them all", async () => {
      const { sql, bindings } = service.db.knex('webhook_deliveries').whereIn('verification_id', ['vrf_a', 'vrf_b']).select('id').toSQL();
      assertReadsIndex(
        await planOf(service.db.knex, factory.name, sql, bindings),
        factory.name,
        'webhook_deliveries',
        'webhook_deliveries_verification_id_index',
        {
          inOrder: false,
        },
      );
    });

    it('looks for due deliveries through the (status, next_attempt_at) index, never reading the whole table', async () => {
      const at = '2026-11-21T10:00:00.000Z';
      const plan = await planOf(service.db.knex, factory.name, hotStatementsMade.get('any_delivery_due')!.sql, [at, at]);
      assertReadsIndex(plan, factory.name, 'webhook_deliveries', 'webhook_deliveries_status_next_attempt_at_index', { inOrder: false });
    });

    // Last: it claims whatever else is due by then.
    it('looks for due deliveries on the read side first: a claim that would find none takes no turn on the writer', async () => {
      const sender = new WebhooksRepository(service.db.knex, service.db.dialect, service.db.hot);
      const claims: string[] = [];
      const seen = (query: { sql: string }) => {
        if (/^update webhook_deliveries set status = 'sending'/.test(query.sql.trim())) claims.push(query.sql);
      };
      service.db.knex.on('query', seen);
      try {
        // Nothing is due at a time before every delivery of these tests.
        assert.deepEqual(await sender.claimDue('worker-early', new Date('2000-01-01T00:00:00.000Z'), 10, 60_000), []);
        assert.equal(claims.length, 0);
        const api = await lenderApi('Look First Lender');
        assert.equal((await api('/webhooks', { url: 'https://127.0.0.1:9/hook', events: ['verification.completed'] })).status, 201);
        await createCompleted(api, 1);
        assert.ok((await sender.claimDue('worker-look', clock.now(), 10, 60_000)).length >= 1);
        assert.equal(claims.length, 1);
      } finally {
        service.db.knex.removeListener('query', seen);
      }
    });
  });
}
