import assert from 'node:assert/strict';
import request from 'supertest';
import { AccountsRepository } from '../../accounts/accounts-repository.ts';
import * as admin from '../../accounts/lender-admin.ts';
import { adminContext } from '../../admin/admin-context.ts';
import { startService, type Service } from '../../service.ts';
import { loadConfig } from '../config.ts';
import { testDatabases, type TestDatabase } from '../../../test/support/test-databases.ts';
import { createLogger } from '../logger.ts';

for (const factory of testDatabases()) {
  describe(`rate limits on ${factory.name} (D8)`, function () {
    this.timeout(30_000);
    let testDb: TestDatabase;
    let services: Service[];
    let ctx: admin.AdminContext;

    before(async () => {
      testDb = await factory.create();
      const config = loadConfig({ DATABASE_URL: testDb.url, SERVICE_MODE: 'production', ENCRYPTION_KEY: 'd'.repeat(64) });
      // Two app instances on one database: like two server processes behind a load balancer.
      services = [await startService(config, createLogger({ level: 'silent' })), await startService(config, createLogger({ level: 'silent' }))];
      ctx = adminContext(config, new AccountsRepository(services[0]!.db.knex));
    });
    after(async () => {
      for (const service of services) await service.close();
      await testDb.drop();
    });

    const call = (service: Service, key: string) => request(service.app).get('/api/v1/verifications/vrf_unknown').auth(key, { type: 'bearer' });

    it('describes the pilot quota on every response, errors included', async () => {
      const lender = await admin.createLender(ctx, { name: 'Pilot Lender', plan: 'pilot' });
      const { apiKey } = await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' });
      const response = await call(services[0]!, apiKey);
      assert.equal(response.status, 404);
      assert.equal(response.headers['x-ratelimit-limit'], '60');
      assert.equal(response.headers['x-ratelimit-remaining'], '59');
      const reset = Number(response.headers['x-ratelimit-reset']);
      assert.ok(reset > Date.now() / 1000 && reset <= Date.now() / 1000 + 61, String(reset));
    });

    it('refuses the eleventh request within a second with 429 and Retry-After (pilot burst 10)', async () => {
      const lender = await admin.createLender(ctx, { name: 'Bursty Lender', plan: 'pilot' });
      const { apiKey } = await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' });
      const responses = await Promise.all(Array.from({ length: 11 }, () => call(services[0]!, apiKey)));
      const limited = responses.filter((r) => r.status === 429);
      assert.equal(limited.length, 1, responses.map((r) => r.status).join(','));
      assert.equal(limited[0]!.body.error, 'rate_limited');
      assert.equal(limited[0]!.headers['retry-after'], '1');
      assert.match(limited[0]!.body.message as string, /retry in 1 second\.$/, 'one second, not "1 seconds"');
      assert.equal(limited[0]!.headers['x-ratelimit-limit'], '60');
    });

    it('shares one quota across processes and honours a per-key override', async () => {
      const lender = await admin.createLender(ctx, { name: 'Shared Lender', plan: 'pilot' });
      const { apiKey, record } = await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' });
      await admin.setKeyRateLimit(ctx, { keyId: record.id, rateLimit: 6, burst: 6 });
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await call(services[0]!, apiKey)).status, (await call(services[1]!, apiKey)).status);
      const expected = factory.name === 'postgres' ? [404, 404, 404, 404, 404, 404, 429, 429] : [404, 404, 404, 404, 404, 404, 404, 404];
      // SQLite counts per process (a SQLite deployment is one process); PostgreSQL shares the counters.
      assert.deepEqual(statuses, expected);
    });

    it('does not count a request the burst window refuses against the minute window', async () => {
      const lender = await admin.createLender(ctx, { name: 'Counted Lender', plan: 'pilot' });
      const { apiKey } = await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' });
      const responses = await Promise.all(Array.from({ length: 12 }, () => call(services[0]!, apiKey)));
      assert.deepEqual(responses.map((r) => r.status).sort(), [...Array(10).fill(404), 429, 429]);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      // 10 counted, then this one: the two refusals took nothing from the minute.
      assert.equal((await call(services[0]!, apiKey)).headers['x-ratelimit-remaining'], '49');
    });

    it("applies a key's new quota from its next request on, in every process", async () => {
      const lender = await admin.createLender(ctx, { name: 'Changing Lender', plan: 'pilot' });
      const { apiKey, record } = await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' });
      for (const service of services) assert.equal((await call(service, apiKey)).headers['x-ratelimit-limit'], '60');
      await admin.setKeyRateLimit(ctx, { keyId: record.id, rateLimit: 3, burst: 3 });
      const first = await call(services[0]!, apiKey);
      assert.deepEqual([first.status, first.headers['x-ratelimit-limit'], first.headers['x-ratelimit-remaining']], [404, '3', '2']);
      const statuses = [(await call(services[1]!, apiKey)).status, (await call(services[0]!, apiKey)).status, (await call(services[1]!, apiKey)).status];
      assert.deepEqual(statuses, factory.name === 'postgres' ? [404, 404, 429] : [404, 404, 404]);
    });

    it('limits requests without a valid key per client address', async () => {
      // Without a key: 120 a minute, burst 30, per client address (docs/decisions.md).
      const anonymous = { perMinute: 120, burst: 30 };
      const guesses = anonymous.burst + 2;
      const responses = await Promise.all(Array.from({ length: guesses }, () => call(services[0]!, 'civ_live_GuessedKey00000000000000000000')));
      const statuses = responses.map((r) => r.status).sort();
      assert.deepEqual(statuses, [...Array(anonymous.burst).fill(401), 429, 429]);
      assert.equal(responses.find((r) => r.status === 401)!.headers['x-ratelimit-limit'], String(anonymous.perMinute));
    });

    // Last: its 401s count against the test's client address, which the test above counts from zero.
    it('refuses a key revoked after it was used from its next request on, in every process (D9)', async () => {
      // The test above used up this address's burst window for the current second.
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const lender = await admin.createLender(ctx, { name: 'Revoking Lender', plan: 'pilot' });
      const { apiKey, record } = await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' });
      for (const service of services) assert.equal((await call(service, apiKey)).status, 404);
      await admin.revokeKey(ctx, record.id);
      for (const service of services) {
        const response = await call(service, apiKey);
        assert.deepEqual([response.status, response.body.error], [401, 'unauthorized']);
      }
    });
  });
}
