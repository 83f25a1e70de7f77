import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';
import { AccountsRepository } from '../accounts/accounts-repository.ts';
import * as admin from '../accounts/lender-admin.ts';
import { adminContext } from '../admin/admin-context.ts';
import { ManualClock } from '../platform/clock.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { monitoringRefreshes } from '../platform/metrics/metrics.ts';
import { startService, type Service } from '../service.ts';
import { monitoringSchedule } from './monitoring.ts';

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;
/** Production's schedule: calendar months. */
const calendarMonths = monitoringSchedule(null);

describe('monitoring schedule', () => {
  it('adds calendar months in UTC, the day kept or the shorter month’s last day', () => {
    assert.equal(calendarMonths.markAt('2026-01-31T10:00:00Z', 1).toISOString(), '2026-02-28T10:00:00.000Z');
    assert.equal(calendarMonths.markAt('2028-01-31T10:00:00Z', 1).toISOString(), '2028-02-29T10:00:00.000Z');
    assert.equal(calendarMonths.markAt('2026-11-30T23:59:00Z', 3).toISOString(), '2027-02-28T23:59:00.000Z');
    assert.equal(calendarMonths.markAt('2026-03-15T00:00:00Z', 12).toISOString(), '2027-03-15T00:00:00.000Z');
  });

  it('counts every mark from the start, so a short month does not shorten the ones after it', () => {
    const schedule = monitoringSchedule(null);
    assert.equal(schedule.markAt('2026-01-31T10:00:00.000Z', 2).toISOString(), '2026-03-31T10:00:00.000Z');
    assert.deepEqual(schedule.retryDelaysMs, [HOUR, 6 * HOUR, DAY]);
  });

  it('the sandbox month is its interval; each retry a tenth of it', () => {
    const schedule = monitoringSchedule(4000);
    assert.equal(schedule.markAt('2026-01-31T10:00:00.000Z', 3).toISOString(), '2026-01-31T10:00:12.000Z');
    assert.deepEqual(schedule.retryDelaysMs, [400, 400, 400]);
  });

  it('SANDBOX_REFRESH_INTERVAL_MS: at least a second, and refused in production', () => {
    const base = { DATABASE_URL: 'sqlite::memory:' };
    assert.equal(loadConfig({ ...base, SANDBOX_REFRESH_INTERVAL_MS: '2500' }).sandboxRefreshIntervalMs, 2500);
    assert.equal(loadConfig(base).sandboxRefreshIntervalMs, null);
    assert.throws(() => loadConfig({ ...base, SANDBOX_REFRESH_INTERVAL_MS: '999' }), /at least 1000/);
    assert.throws(() => loadConfig({ ...base, SANDBOX_REFRESH_INTERVAL_MS: '2s' }), /whole number/);
    assert.throws(
      () => loadConfig({ ...base, SANDBOX_REFRESH_INTERVAL_MS: '2000', SERVICE_MODE: 'production', ENCRYPTION_KEY: 'c'.repeat(64) }),
      /sandbox only/,
    );
  });
});

for (const factory of testDatabases()) {
  describe(`ongoing monitoring on ${factory.name} (calendar months, a manual clock)`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let service: Service;
    let clock: ManualClock;
    let key: string;
    let gdprKey: string;
    let lenderId: string;
    const logger = createLogger({ level: 'silent' });
    const api = (method: 'get' | 'post', path: string, apiKey = key) => request(service.app)[method](`/api/v1${path}`).auth(apiKey, { type: 'bearer' });
    const create = (body: object) => api('post', '/verifications').set('Idempotency-Key', randomUUID()).send(body);
    const monitoringOf = async (id: string) => (await api('get', `/verifications/${id}`)).body.monitoring;
    // Read from the outbox itself: the feed reaches back 30 days, and the clock here moves months.
    const eventsOf = async (id: string) =>
      (await service.db.knex('events').where({ verification_id: id }).orderBy('sequence').select('payload')).map(
        (row: { payload: string }) => JSON.parse(row.payload) as { event: string; reason?: string },
      );
    const tapesOf = async (id: string) => (await api('get', `/verifications/${id}/tapes?limit=100`)).body.data as Array<{ reason: string; tape_id: string }>;
    const runUntil = async (at: string) => {
      clock.set(at);
      await service.jobs.runDue();
    };

    before(async () => {
      testDb = await factory.create();
      clock = new ManualClock('2026-01-31T10:00:00.000Z');
      service = await startService(loadConfig({ DATABASE_URL: testDb.url, VALIDATE_RESPONSES: '1', SANDBOX_COMPLETE_DELAY_MS: '1000' }), logger, { clock });
      const ctx = adminContext({ mode: 'sandbox' }, new AccountsRepository(service.db.knex), clock);
      const lender = await admin.createLender(ctx, { name: 'Northwind Capital' });
      lenderId = lender.id;
      key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
      gdprKey = (await admin.createKey(ctx, { lenderId: lender.id, role: 'gdpr_admin' })).apiKey;
    });
    after(async () => {
      await service.close();
      await testDb.drop();
    });

    it('three months from the 31st of January: refreshes on the last days of February and March, then the window ends on the 30th of April', async () => {
      clock.set('2026-01-31T10:00:00.000Z');
      const created = await create({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'], monitoring: { months: 3 } });
      assert.equal(created.status, 201, created.text);
      const id = created.body.verification_id as string;
      assert.equal(created.body.monitoring.ends_at, '2026-04-30T10:00:00.000Z');
      assert.equal(created.body.monitoring.next_refresh_at, '2026-02-28T10:00:00.000Z');

      // Nothing runs before its time.
      await runUntil('2026-02-28T09:59:59.000Z');
      assert.equal((await tapesOf(id)).length, 1);
      await runUntil('2026-02-28T10:00:00.000Z');
      let monitoring = await monitoringOf(id);
      assert.equal(monitoring.last_refresh_at, '2026-02-28T10:00:00.000Z');
      assert.equal(monitoring.next_refresh_at, '2026-03-31T10:00:00.000Z', 'counted from the start, not from the short February');
      // A job run twice (at-least-once) does nothing the second time.
      await service.jobs.runDue();
      assert.equal((await tapesOf(id)).length, 2);

      await runUntil('2026-03-31T10:00:00.000Z');
      await runUntil('2026-04-30T10:00:00.000Z');
      monitoring = await monitoringOf(id);
      assert.equal(monitoring.state, 'ended');
      assert.equal(monitoring.end_reason, 'window_over');
      assert.equal(monitoring.next_refresh_at, null);
      assert.deepEqual(
        (await tapesOf(id)).map((t) => t.reason),
        ['refresh', 'refresh', 'refresh', 'completion'],
        'a window of three months has three refreshes',
      );
      assert.deepEqual(
        (await eventsOf(id)).map((e) => `${e.event}${e.reason ? `:${e.reason}` : ''}`),
        ['verification.completed', 'tape.updated:refresh', 'tape.updated:refresh', 'tape.updated:refresh', 'verification.monitoring_ended:window_over'],
      );
      // Nothing after the end.
      await runUntil('2026-06-30T10:00:00.000Z');
      assert.equal((await tapesOf(id)).length, 4);
      // Peer benchmarks count the latest tape only: one member row, re-scored at each refresh.
      const members = await service.db.knex('benchmark_members').where({ verification_id: id }).count<{ n: number | string }[]>({ n: '*' });
      assert.equal(Number(members[0]!.n), 1);
    });

    it('a failing refresh is retried after 1, 6 and 24 hours, then counted, announced once, and the month after is tried', async () => {
      clock.set('2026-05-01T00:00:00.000Z');
      const created = await create({ obligor_reference: 'test-refresh-fail-retries', creator_platforms: ['youtube'], monitoring: { months: 6 } });
      const id = created.body.verification_id as string;
      await runUntil('2026-05-01T00:00:01.000Z');
      assert.equal((await api('get', `/verifications/${id}`)).body.status, 'completed');
      const start = (await monitoringOf(id)).starts_at as string;
      const mark = calendarMonths.markAt(start, 1).getTime();
      const counted = async (outcome: string) => (await monitoringRefreshes.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
      const [retryingBefore, failedBefore] = [await counted('retrying'), await counted('failed')];
      await runUntil(new Date(mark).toISOString());
      const afterFirst = await monitoringOf(id);
      assert.equal(afterFirst.next_refresh_at, new Date(mark + HOUR).toISOString(), 'the first retry an hour later');
      assert.equal(afterFirst.failed_refreshes, 0, 'not counted while it is retried');
      await runUntil(new Date(mark + HOUR).toISOString());
      assert.equal((await monitoringOf(id)).next_refresh_at, new Date(mark + 7 * HOUR).toISOString());
      await runUntil(new Date(mark + 7 * HOUR).toISOString());
      assert.equal((await monitoringOf(id)).next_refresh_at, new Date(mark + 31 * HOUR).toISOString());
      await runUntil(new Date(mark + 31 * HOUR).toISOString());
      const failed = await monitoringOf(id);
      assert.equal(failed.failed_refreshes, 1);
      assert.equal(failed.state, 'active');
      assert.equal(failed.next_refresh_at, calendarMonths.markAt(start, 2).toISOString(), 'the next month, as scheduled');
      const announced = (await eventsOf(id)).filter((e) => e.event === 'verification.refresh_failed');
      assert.equal(announced.length, 1);
      assert.deepEqual(
        (await tapesOf(id)).map((t) => t.reason),
        ['completion'],
      );
      assert.equal((await counted('retrying')) - retryingBefore, 3, 'civ_monitoring_refreshes_total: three retries');
      assert.equal((await counted('failed')) - failedBefore, 1, 'civ_monitoring_refreshes_total: then one failure');
    });

    it('a refresh on demand waits its turn on the one-a-day limit, measured from the last one asked for', async () => {
      clock.set('2026-07-01T00:00:00.000Z');
      const created = await create({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'], monitoring: { months: 6 } });
      const id = created.body.verification_id as string;
      assert.equal((await api('post', `/verifications/${id}/refresh`)).status, 202);
      await runUntil('2026-07-01T00:00:01.000Z');
      clock.set('2026-07-01T23:59:59.000Z');
      const refused = await api('post', `/verifications/${id}/refresh`);
      assert.equal(refused.status, 429, refused.text);
      assert.equal(refused.headers['retry-after'], '1');
      clock.set('2026-07-02T00:00:00.000Z');
      assert.equal((await api('post', `/verifications/${id}/refresh`)).status, 202);
    });

    it('the data-protection report holds every tape; the erasure removes the history and counts it', async () => {
      clock.set('2026-08-01T00:00:00.000Z');
      const reference = 'demo_prime_multi';
      const created = await create({ obligor_reference: reference, creator_platforms: ['youtube', 'stripe'], monitoring: { months: 2 } });
      const id = created.body.verification_id as string;
      assert.equal((await api('post', `/verifications/${id}/refresh`)).status, 202);
      await runUntil('2026-08-01T00:00:01.000Z');
      assert.equal((await tapesOf(id)).length, 2);
      const access = await request(service.app).get('/api/v1/gdpr/access').query({ obligor_id: reference }).auth(gdprKey, { type: 'bearer' });
      assert.equal(access.status, 200, access.text);
      const record = (access.body.verifications as Array<{ verification_id?: string; tapes: unknown[] }>).find((v) => JSON.stringify(v).includes(id))!;
      assert.equal(record.tapes.length, 2, 'the earlier tape is in the report');
      // The creator's tapes, latest and earlier, of this lender's verifications of the reference:
      // what the erasure must count, whatever else the database holds.
      const held = async (table: 'tapes' | 'tape_history') =>
        Number(
          (
            await service.db
              .knex(table)
              .join('verifications', 'verifications.id', `${table}.verification_id`)
              .where({ 'verifications.obligor_reference': reference, 'verifications.lender_id': lenderId })
              .count<{ n: number | string }[]>({ n: '*' })
          )[0]!.n,
        );
      const tapesHeld = (await held('tapes')) + (await held('tape_history'));
      assert.ok(tapesHeld >= 2, `${tapesHeld} tapes`);
      const erased = await request(service.app).post('/api/v1/gdpr/erase').auth(gdprKey, { type: 'bearer' }).send({ obligor_id: reference });
      assert.equal(erased.status, 200, erased.text);
      assert.equal(erased.body.counts.tapes, tapesHeld, erased.text);
      const left = await service.db.knex('tape_history').where({ verification_id: id }).count<{ n: number | string }[]>({ n: '*' });
      assert.equal(Number(left[0]!.n), 0);
    });
  });
}
