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
import type { VerificationListFilter } from './verifications-repository.ts';

const MINUTE = 60_000;

for (const factory of testDatabases()) {
  describe(`GET /verifications on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let service: Service;
    let clock: ManualClock;
    let key: string;
    let otherKey: string;
    let lenderId: string;
    /** Ids in creation order, with what they were created with. */
    const made: Array<{ id: string; reference: string; productType: string; createdAt: string }> = [];

    const list = (query: string, apiKey = key) => request(service.app).get(`/api/v1/verifications${query}`).auth(apiKey, { type: 'bearer' });

    before(async () => {
      testDb = await factory.create();
      clock = new ManualClock('2026-11-21T10:00:00.000Z');
      service = await startService(
        loadConfig({ DATABASE_URL: testDb.url, VALIDATE_RESPONSES: '1', SERVICE_MODE: 'sandbox' }),
        createLogger({ level: 'silent' }),
        {
          clock,
        },
      );
      const ctx = adminContext({ mode: 'sandbox' }, new AccountsRepository(service.db.knex), clock);
      const lender = await admin.createLender(ctx, { name: 'Northwind Capital' });
      lenderId = lender.id;
      key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
      const other = await admin.createLender(ctx, { name: 'Other Lender' });
      otherKey = (await admin.createKey(ctx, { lenderId: other.id, role: 'lender' })).apiKey;
      // Seven verifications a minute apart, two of them created in the same millisecond (the id breaks the tie).
      const products = ['rbf', 'term_loan', 'rbf', 'hpp', 'rbf', 'term_loan', 'rbf'];
      for (let i = 0; i < products.length; i += 1) {
        if (i !== 4) clock.advance(MINUTE);
        const reference = i % 3 === 0 ? 'obligor-repeat' : `obligor-${i}`;
        const response = await request(service.app)
          .post('/api/v1/verifications')
          .auth(key, { type: 'bearer' })
          .set('Idempotency-Key', randomUUID())
          .send({ obligor_reference: reference, creator_platforms: ['youtube'], product_type: products[i] });
        assert.equal(response.status, 201, response.text);
        made.push({ id: response.body.verification_id, reference, productType: products[i]!, createdAt: response.body.created_at });
      }
      // One completes at once (a synthetic creator), so the status filter has two states to tell apart.
      clock.advance(MINUTE);
      const synthetic = await request(service.app)
        .post('/api/v1/verifications')
        .auth(key, { type: 'bearer' })
        .set('Idempotency-Key', randomUUID())
        .send({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] });
      made.push({ id: synthetic.body.verification_id, reference: 'demo_prime_multi', productType: 'rbf', createdAt: synthetic.body.created_at });
      // Another lender's verification never shows.
      await request(service.app)
        .post('/api/v1/verifications')
        .auth(otherKey, { type: 'bearer' })
        .set('Idempotency-Key', randomUUID())
        .send({ obligor_reference: 'obligor-repeat', creator_platforms: ['youtube'] });
    });
    after(async () => {
      await service.close();
      await testDb.drop();
    });

    /** The expected list order: newest first, ties by id descending. */
    const newestFirst = (rows: typeof made) => [...rows].sort((a, b) => b.createdAt.localeCompare(a.createdAt) || (a.id < b.id ? 1 : -1)).map((r) => r.id);

    it('lists the lender’s verifications newest first, whole resources equal to the status endpoint’s', async () => {
      const response = await list('');
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.has_more, false);
      assert.deepEqual(
        response.body.data.map((v: { verification_id: string }) => v.verification_id),
        newestFirst(made),
      );
      for (const v of response.body.data) {
        const single = await request(service.app).get(`/api/v1/verifications/${v.verification_id}`).auth(key, { type: 'bearer' });
        assert.deepEqual(v, single.body);
      }
    });

    it('walks every page with starting_after, each once, in order, has_more false only on the last', async () => {
      const seen: string[] = [];
      let after: string | undefined;
      for (let page = 0; page < 10; page += 1) {
        const response = await list(`?limit=3${after ? `&starting_after=${after}` : ''}`);
        assert.equal(response.status, 200, response.text);
        const ids = response.body.data.map((v: { verification_id: string }) => v.verification_id);
        seen.push(...ids);
        after = ids.at(-1);
        if (!response.body.has_more) break;
        assert.equal(ids.length, 3);
      }
      assert.deepEqual(seen, newestFirst(made));
    });

    it('a page boundary inside two verifications of the same millisecond loses and repeats nothing', async () => {
      const order = newestFirst(made);
      const sameInstant = made.filter((m) => made.filter((n) => n.createdAt === m.createdAt).length > 1);
      assert.equal(sameInstant.length, 2, 'the fixture has one tie');
      const firstOfTie = order.indexOf(
        sameInstant
          .map((m) => m.id)
          .sort()
          .reverse()[0]!,
      );
      const response = await list(`?limit=1&starting_after=${order[firstOfTie]}`);
      assert.deepEqual(
        response.body.data.map((v: { verification_id: string }) => v.verification_id),
        [order[firstOfTie + 1]],
      );
    });

    it('filters by status, obligor_reference, product_type and created range, alone and together', async () => {
      const ids = async (query: string) => {
        const response = await list(query);
        assert.equal(response.status, 200, response.text);
        return response.body.data.map((v: { verification_id: string }) => v.verification_id);
      };
      assert.deepEqual(await ids('?status=completed'), [made.at(-1)!.id]);
      assert.deepEqual(await ids('?status=pending_consent'), newestFirst(made.slice(0, -1)));
      assert.deepEqual(await ids('?status=expired'), []);
      assert.deepEqual(await ids('?obligor_reference=obligor-repeat'), newestFirst(made.filter((m) => m.reference === 'obligor-repeat')));
      assert.deepEqual(await ids('?product_type=term_loan'), newestFirst(made.filter((m) => m.productType === 'term_loan')));
      const from = made[2]!.createdAt;
      const to = made[5]!.createdAt;
      const inRange = made.filter((m) => m.createdAt >= from && m.createdAt < to);
      assert.equal(inRange.length, 3);
      assert.deepEqual(await ids(`?created_gte=${from}&created_lt=${to}`), newestFirst(inRange));
      // Another spelling of the same instant (an offset, no milliseconds) means the same.
      const offset = new Date(Date.parse(from) + 2 * 60 * MINUTE).toISOString().replace('.000Z', '+02:00');
      assert.deepEqual(await ids(`?created_gte=${encodeURIComponent(offset)}&created_lt=${to}`), newestFirst(inRange));
      assert.deepEqual(
        await ids(`?product_type=rbf&status=pending_consent&created_gte=${from}`),
        newestFirst(made.filter((m) => m.productType === 'rbf' && m.createdAt >= from && m.reference !== 'demo_prime_multi')),
      );
    });

    it('filters by several statuses at once, comma-separated', async () => {
      const ids = async (query: string) => {
        const response = await list(query);
        assert.equal(response.status, 200, response.text);
        return response.body.data.map((v: { verification_id: string }) => v.verification_id);
      };
      assert.deepEqual(await ids('?status=completed,pending_consent'), newestFirst(made));
      assert.deepEqual(await ids('?status=completed,failed'), [made.at(-1)!.id]);
      assert.deepEqual(await ids('?status=expired,failed'), []);
      assert.deepEqual(await ids('?status=pending_consent,expired&product_type=term_loan'), newestFirst(made.filter((m) => m.productType === 'term_loan')));
      // Paged, the states' rows come in list order, each once.
      const first = await list('?status=completed,pending_consent&limit=4');
      const rest = await list(`?status=completed,pending_consent&limit=10&starting_after=${first.body.data.at(-1).verification_id}`);
      assert.deepEqual(
        [...first.body.data, ...rest.body.data].map((v: { verification_id: string }) => v.verification_id),
        newestFirst(made),
      );
    });

    it('walks back with ending_before: each page newest first, the nearest newer ones, has_more until the newest', async () => {
      const order = newestFirst(made);
      const seen: string[][] = [];
      let before = order.at(-1)!;
      for (let page = 0; page < 10; page += 1) {
        const response = await list(`?limit=3&ending_before=${before}`);
        assert.equal(response.status, 200, response.text);
        const ids = response.body.data.map((v: { verification_id: string }) => v.verification_id);
        seen.unshift(ids);
        before = ids[0];
        if (!response.body.has_more) break;
        assert.equal(ids.length, 3);
      }
      assert.deepEqual(seen.flat(), order.slice(0, -1));
      // The page just before a verification in the middle: the nearest newer ones, newest first.
      const middle = await list(`?limit=2&ending_before=${order[4]}`);
      assert.deepEqual(
        middle.body.data.map((v: { verification_id: string }) => v.verification_id),
        [order[2], order[3]],
      );
      assert.equal(middle.body.has_more, true);
    });

    it('refuses both cursors at once, and an ending_before that is none of the lender’s', async () => {
      const order = newestFirst(made);
      for (const query of [`?starting_after=${order[5]}&ending_before=${order[1]}`, '?ending_before=vrf_neverissued']) {
        const response = await list(query);
        assert.equal(response.status, 400, `${query}: ${response.text}`);
        assert.equal(response.body.error, 'validation_error', query);
        assert.match(response.body.message, /ending_before/);
      }
    });

    it('another lender sees only its own; its cursor is refused here', async () => {
      const other = await list('', otherKey);
      assert.equal(other.body.data.length, 1);
      const response = await list(`?starting_after=${other.body.data[0].verification_id}`);
      assert.equal(response.status, 400, response.text);
      assert.equal(response.body.error, 'validation_error');
      assert.match(response.body.message, /starting_after/);
    });

    it('refuses bad input with validation_error: unknown status, limit out of range, not a date-time, unknown filter', async () => {
      for (const query of [
        '?status=cancelled_forever',
        '?status=completed,paused',
        '?status=completed,completed',
        '?limit=0',
        '?limit=101',
        '?created_gte=yesterday',
        '?created_lt=2026-13-01T00:00:00Z',
        '?color=red',
      ]) {
        const response = await list(query);
        assert.equal(response.status, 400, `${query}: ${response.text}`);
        assert.equal(response.body.error, 'validation_error', query);
      }
    });

    it('needs a lender key', async () => {
      assert.equal((await request(service.app).get('/api/v1/verifications')).status, 401);
    });

    // The plans: every filter reads one index in list order, so a page costs the same at 10^6 rows.
    const filters: Array<[string, Omit<VerificationListFilter, 'after'>]> = [
      ['no filter', {}],
      ['status', { status: ['completed'] }],
      ['several statuses', { status: ['completed', 'pending_consent'] }],
      ['obligor_reference', { obligorReference: 'obligor-repeat' }],
      ['product_type', { productType: 'hpp' }],
      ['created range', { createdGte: '2026-11-21T10:00:00.000Z', createdLt: '2026-11-22T10:00:00.000Z' }],
      ['status and created range', { status: ['pending_consent'], createdGte: '2026-11-21T10:00:00.000Z' }],
      ['status and product_type', { status: ['pending_consent'], productType: 'rbf' }],
      ['several statuses and product_type', { status: ['pending_consent', 'failed'], productType: 'rbf' }],
    ];
    for (const [name, filter] of filters) {
      for (const cursor of [undefined, 'after', 'before'] as const) {
        it(`the page query (${name}${cursor ? `, ${cursor} a cursor` : ''}) searches an index in order: no table scan, no sort`, async () => {
          const { sql, bindings } = service.verifications.listSql(
            lenderId,
            { ...filter, ...(cursor ? { [cursor]: { createdAt: made[3]!.createdAt, id: made[3]!.id } } : {}) },
            21,
          );
          const plan = await planOf(service.db.knex, factory.name, sql, bindings);
          if (process.env.SHOW_PLANS) console.log(`${name}${cursor ? ` + ${cursor}` : ''}:\n${plan}`);
          assertReadsIndex(plan, factory.name, 'verifications', 'verifications_list', { inOrder: true });
        });
      }
    }

    it('the status and tape reads find the verification by its primary key, whatever the statistics say of the lender index', async () => {
      if (factory.name === 'sqlite') {
        // Statistics as ANALYZE gathers them on 1,000 verifications of 20 lenders (bench:scale): with
        // them SQLite chose to read a tape's verification from an index of the lender's rows, which
        // covers the columns that read needs, and kept that plan as the table grew to 10^6 rows.
        await service.db.knex.raw('analyze');
        await service.db.knex.raw("delete from sqlite_stat1 where tbl = 'verifications'");
        const stats: Array<[string, string]> = [
          ['verifications_list_product_idx', '1000 50 50 1 1'],
          ['verifications_list_obligor_idx', '1000 50 1 1 1'],
          ['verifications_list_status_idx', '1000 50 13 1 1'],
          ['verifications_list_idx', '1000 50 1 1'],
          ['verifications_status_expires_at_index', '1000 250 200'],
          ['verifications_consent_token_hash_unique', '1000 1'],
          ['sqlite_autoindex_verifications_1', '1000 1'],
        ];
        for (const [idx, stat] of stats) await service.db.knex.raw("insert into sqlite_stat1 (tbl, idx, stat) values ('verifications', ?, ?)", [idx, stat]);
        await service.db.knex.raw('analyze sqlite_schema');
      }
      try {
        for (const name of ['verification_for_lender', 'tape_for_lender']) {
          const statement = hotStatementsMade.get(name)!;
          const plan = await planOf(service.db.knex, factory.name, statement.sql, ['vrf_x', lenderId]);
          if (factory.name === 'sqlite') assert.match(plan, /SEARCH v USING INDEX sqlite_autoindex_verifications_1 \(id=\?\)/, plan);
          else assert.match(plan, /Index Scan using verifications_pkey on verifications v/, plan);
        }
      } finally {
        if (factory.name === 'sqlite') {
          await service.db.knex.raw('delete from sqlite_stat1');
          await service.db.knex.raw('analyze sqlite_schema');
        }
      }
    });

    it("a creator's erasure finds their stored idempotent answers by verification through an index, not by reading them all", async () => {
      const { sql, bindings } = service.db.knex('idempotency_keys').whereIn('verification_id', ['vrf_a', 'vrf_b']).delete().toSQL();
      assertReadsIndex(await planOf(service.db.knex, factory.name, sql, bindings), factory.name, 'idempotency_keys', 'idempotency_keys_verification_id_index', {
        inOrder: false,
      });
    });
  });
}
