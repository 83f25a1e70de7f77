import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../platform/db/database.ts';
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';
import { AccountsRepository } from './accounts-repository.ts';
import { hashApiKey } from './api-keys.ts';
import * as admin from './lender-admin.ts';

for (const factory of testDatabases()) {
  describe(`accounts storage on ${factory.name}`, () => {
    let testDb: TestDatabase;
    let db: Database;
    let ctx: admin.AdminContext;

    before(async () => {
      testDb = await factory.create();
      db = openDatabase(testDb.url);
      await db.migrate();
      ctx = {
        accounts: new AccountsRepository(db.knex),
        mode: 'sandbox',
        now: () => new Date('2026-11-21T10:00:00Z'),
        validatePolicyOverrides: (_type, overrides) => {
          if ('bogus' in overrides) throw new Error('bogus is not a threshold');
        },
      };
    });
    after(async () => {
      await db.close();
      await testDb.drop();
    });

    it('applies migrations idempotently, also from a second connection', async () => {
      await db.migrate();
      const second = openDatabase(testDb.url);
      try {
        await second.migrate();
        assert.equal(await second.isReachable(), true);
      } finally {
        await second.close();
      }
    });

    it('stores keys only as hashes and resolves an active key to its lender and role', async () => {
      const lender = await admin.createLender(ctx, { name: 'Northwind Capital', plan: 'production', jurisdiction: 'uk_gdpr' });
      const { apiKey, record } = await admin.createKey(ctx, { lenderId: lender.id, role: 'gdpr_admin' });
      const stored = await db.knex('api_keys').where({ id: record.id }).first();
      assert.equal(stored.key_hash, hashApiKey(apiKey));
      assert.ok(!JSON.stringify(stored).includes(apiKey), 'the key itself is stored');
      const principal = await ctx.accounts.findPrincipalByKeyHash(hashApiKey(apiKey));
      assert.equal(principal?.role, 'gdpr_admin');
      assert.equal(principal?.lender.id, lender.id);
      assert.equal(principal?.lender.jurisdiction, 'uk_gdpr');
    });

    it('stops resolving a key once it is revoked', async () => {
      const lender = await admin.createLender(ctx, { name: 'Revocation Bank' });
      const { apiKey, record } = await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' });
      assert.ok(await ctx.accounts.findPrincipalByKeyHash(hashApiKey(apiKey)));
      const revoked = await admin.revokeKey(ctx, record.id);
      assert.equal(revoked.revokedAt, '2026-11-21T10:00:00.000Z');
      assert.equal(await ctx.accounts.findPrincipalByKeyHash(hashApiKey(apiKey)), null);
    });

    it('updates plan, rate limit and allowlist, refusing nonsense', async () => {
      const lender = await admin.createLender(ctx, { name: 'Limits Ltd' });
      const updated = await admin.updateLender(ctx, {
        id: lender.id,
        plan: 'production',
        rateLimit: 900,
        burst: 60,
        allowlist: ['10.0.0.0/8', '2001:db8::/32', '192.0.2.7'],
      });
      assert.deepEqual(
        { plan: updated.plan, rate: updated.rateLimitPerMinute, burst: updated.rateLimitBurst, allowlist: updated.ipAllowlist },
        { plan: 'production', rate: 900, burst: 60, allowlist: ['10.0.0.0/8', '2001:db8::/32', '192.0.2.7/32'] },
      );
      await assert.rejects(admin.updateLender(ctx, { id: lender.id, allowlist: ['10.0.0.0/33'] }), /not an IP address or CIDR/);
      await assert.rejects(admin.updateLender(ctx, { id: lender.id, rateLimit: 100 }), /go together/);
      await assert.rejects(admin.updateLender(ctx, { id: lender.id, plan: 'gold' }), /plan must be one of/);
      await assert.rejects(admin.updateLender(ctx, { id: 'lnd_missing', plan: 'pilot' }), /No lender account/);
      assert.equal((await ctx.accounts.findLender(lender.id))?.plan, 'production');
    });

    it('merges policy overrides and never stores a refused one', async () => {
      const lender = await admin.createLender(ctx, { name: 'Policy Partners' });
      await admin.setPolicy(ctx, { id: lender.id, productType: 'rbf', overrides: { min_months_history: 6 } });
      const merged = await admin.setPolicy(ctx, { id: lender.id, productType: 'rbf', overrides: { max_volatility_cv: 0.8 } });
      assert.deepEqual(merged, { min_months_history: 6, max_volatility_cv: 0.8 });
      await assert.rejects(admin.setPolicy(ctx, { id: lender.id, productType: 'rbf', overrides: { bogus: 1 } }), /policy refused: bogus/);
      assert.deepEqual(await ctx.accounts.findPolicies(lender.id), { rbf: { min_months_history: 6, max_volatility_cv: 0.8 } });
    });

    it('reads what scoring needs of a lender in one hot statement: its jurisdiction and every product type policy', async () => {
      const hot = new AccountsRepository(db.reader, db.hot);
      const lender = await admin.createLender(ctx, { name: 'Scoring Partners', jurisdiction: 'difc' });
      assert.deepEqual(await hot.findScoringProfile(lender.id), { jurisdiction: 'difc', policies: {} });
      await admin.setPolicy(ctx, { id: lender.id, productType: 'rbf', overrides: { min_months_history: 6 } });
      await admin.setPolicy(ctx, { id: lender.id, productType: 'term_loan', overrides: { max_volatility_cv: 0.5 } });
      assert.deepEqual(await hot.findScoringProfile(lender.id), {
        jurisdiction: 'difc',
        policies: { rbf: { min_months_history: 6 }, term_loan: { max_volatility_cv: 0.5 } },
      });
      // Another lender's policies are not this one's.
      const other = await admin.createLender(ctx, { name: 'Other Partners' });
      assert.deepEqual((await hot.findScoringProfile(other.id))?.policies, {});
      assert.equal(await hot.findScoringProfile('lnd_missing'), null);
    });

    it('creates the sandbox demo account once, however often it starts', async () => {
      const demoKey = 'civ_test_ConformanceDemoKey000000000000';
      await Promise.all([admin.ensureDemoAccount(ctx, demoKey), admin.ensureDemoAccount(ctx, demoKey)]);
      await admin.ensureDemoAccount(ctx, demoKey);
      const keys = await ctx.accounts.listKeys(admin.DEMO_LENDER_ID);
      assert.equal(keys.length, 1);
      assert.equal((await ctx.accounts.findPrincipalByKeyHash(hashApiKey(demoKey)))?.role, 'lender');
      await assert.rejects(admin.ensureDemoAccount(ctx, 'not-a-key'), /DEMO_API_KEY/);
    });

    it('keeps the first value of a setting when processes race to initialise it', async () => {
      const values = await Promise.all(['a', 'b', 'c'].map((v) => ctx.accounts.initialiseSetting('race', v)));
      assert.equal(new Set(values).size, 1);
    });

    if (factory.name === 'postgres') {
      it('counts concurrent requests of one key together: each gets its own place in both windows, with fewer statements', async () => {
        const lender = await admin.createLender(ctx, { name: 'Counted Lending' });
        const { apiKey } = await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' });
        let statements = 0;
        const counting = new AccountsRepository(db.knex, {
          rows: (statement, params) => {
            statements++;
            return db.hot.rows(statement, params);
          },
          poolStats: () => db.hot.poolStats(),
          close: () => db.hot.close(),
        });
        const now = Date.now();
        const windows = { burstKey: `b:${lender.id}`, minuteKey: `m:${lender.id}`, burstExpiresAt: now + 1000, minuteExpiresAt: now + 60_000, now, burst: 12 };
        const found = await Promise.all(Array.from({ length: 20 }, () => counting.findPrincipalCountingRequest(hashApiKey(apiKey), windows)));
        assert.ok(found.every((f) => f?.principal.lender.id === lender.id));
        const burst = found.map((f) => f!.counted.burstPoints);
        assert.deepEqual(
          burst,
          Array.from({ length: 20 }, (_, i) => i + 1),
          'each request its own place, in the order they came',
        );
        // The 12 the burst window allowed are counted in the minute window, each once; the 8 it refused are not.
        const minute = found.map((f) => f!.counted.minutePoints);
        assert.deepEqual(minute, [...Array.from({ length: 12 }, (_, i) => i + 1), ...Array<number>(8).fill(12)]);
        assert.ok(statements < 20, `${statements} statements for 20 requests`);
        const [burstRow, minuteRow] = await Promise.all([
          db.knex('rate_limits').where({ key: windows.burstKey }).first(),
          db.knex('rate_limits').where({ key: windows.minuteKey }).first(),
        ]);
        assert.equal(Number(burstRow.points), 20);
        assert.equal(Number(minuteRow.points), 12);
        // A key that resolves to nothing counts nowhere, however many ask at once.
        await admin.revokeKey(ctx, found[0]!.principal.keyId);
        assert.deepEqual(await Promise.all([1, 2, 3].map(() => counting.findPrincipalCountingRequest(hashApiKey(apiKey), { ...windows, now: Date.now() }))), [
          null,
          null,
          null,
        ]);
        assert.equal(Number((await db.knex('rate_limits').where({ key: windows.burstKey }).first()).points), 20);
      });
    }
  });
}
