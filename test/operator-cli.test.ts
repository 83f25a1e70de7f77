import assert from 'node:assert/strict';
import request from 'supertest';
import { loadConfig } from '../src/platform/config.ts';
import { createLogger } from '../src/platform/logger.ts';
import { runAdmin } from '../src/admin/run-admin.ts';
import { startService, type Service } from '../src/service.ts';
import { testDatabases, type TestDatabase } from './support/test-databases.ts';

/**
 * The operator CLI as an operator runs it (its own process, the server's DATABASE_URL) beside a
 * running service on the same database: lender deactivation, policy overrides, the deployment's
 * key mode, tape signing keys and the data-protection audit trail.
 */

const PRODUCTION = { SERVICE_MODE: 'production', ENCRYPTION_KEY: 'c'.repeat(64) };

for (const factory of testDatabases()) {
  describe(`operator CLI on ${factory.name}`, function () {
    this.timeout(120_000);
    let testDb: TestDatabase;
    let service: Service;
    let env: Record<string, string>;

    before(async () => {
      testDb = await factory.create();
      env = { DATABASE_URL: testDb.url, SERVICE_MODE: 'sandbox', LOG_LEVEL: 'silent' };
      service = await startService(
        loadConfig({ DATABASE_URL: testDb.url, SERVICE_MODE: 'sandbox', VALIDATE_RESPONSES: '1' }),
        createLogger({ level: 'silent' }),
      );
    });
    after(async () => {
      await service.close();
      await testDb.drop();
    });

    it('lender deactivate: the next request with any of its keys is 401; reactivate: they work again', async () => {
      const lender = await runAdmin(env, ['lender', 'create', '--name', 'Deactivated Capital']);
      const { api_key: key } = await runAdmin(env, ['key', 'create', '--lender', lender.id, '--role', 'lender']);
      const call = () => request(service.app).get('/api/v1/verifications?limit=1').auth(key, { type: 'bearer' });
      assert.equal((await call()).status, 200);

      const deactivated = (await runAdmin(env, ['lender', 'deactivate', '--id', lender.id])) as { deactivated_at: string | null };
      assert.ok(deactivated.deactivated_at);
      const refused = await call();
      assert.equal(refused.status, 401);
      assert.equal(refused.body.error, 'unauthorized');
      assert.match(refused.body.message, /deactivated/);
      await assert.rejects(runAdmin(env, ['lender', 'deactivate', '--id', lender.id]), /already deactivated/);

      await runAdmin(env, ['lender', 'reactivate', '--id', lender.id]);
      assert.equal((await call()).status, 200);
    });

    it('dashboard-user deactivate: sign-in refused and listed as deactivated; reactivate: sign-in works again', async () => {
      const lender = await runAdmin(env, ['lender', 'create', '--name', 'Dashboard Capital']);
      const email = 'ops@dashboard-capital.example';
      const { password } = (await runAdmin(env, ['dashboard-user', 'create', '--lender', lender.id, '--email', email, '--role', 'viewer'])) as {
        password: string;
      };
      const signIn = async () => {
        const form = await request(service.app).get('/dashboard/sign-in');
        const token = /name="_csrf" value="([^"]+)"/.exec(form.text)![1]!;
        return request(service.app)
          .post('/dashboard/sign-in')
          .set('Cookie', `civ_dashboard_login=${token}`)
          .type('form')
          .send({ _csrf: token, email, password });
      };
      assert.equal((await signIn()).status, 303);

      const deactivated = (await runAdmin(env, ['dashboard-user', 'deactivate', '--email', email])) as { deactivated_at: string | null };
      assert.ok(deactivated.deactivated_at);
      const refused = await signIn();
      assert.equal(refused.status, 403);
      assert.match(refused.text, /deactivated/);
      const listed = (await runAdmin(env, ['dashboard-user', 'list', '--lender', lender.id])) as Array<{ email: string; deactivated_at: string | null }>;
      assert.deepEqual(
        listed.map((u) => [u.email, u.deactivated_at]),
        [[email, deactivated.deactivated_at]],
      );
      await assert.rejects(runAdmin(env, ['dashboard-user', 'deactivate', '--email', email]), /already deactivated/);

      await runAdmin(env, ['dashboard-user', 'reactivate', '--email', email]);
      assert.equal((await signIn()).status, 303);
    });

    it('policy show and clear: one override, then all; the defaults apply again', async () => {
      const lender = await runAdmin(env, ['lender', 'create', '--name', 'Policy Capital']);
      await runAdmin(env, ['lender', 'policy', '--id', lender.id, '--product-type', 'rbf', '--set', 'min_months_history=5', 'max_advance_eur=50000']);
      const shown = (await runAdmin(env, ['policy', 'show', '--lender', lender.id])) as { policies: Record<string, Record<string, unknown>> };
      assert.deepEqual(shown.policies, { rbf: { min_months_history: 5, max_advance_eur: 50000 } });

      const partly = (await runAdmin(env, ['policy', 'clear', '--lender', lender.id, '--product-type', 'rbf', '--keys', 'max_advance_eur'])) as {
        overrides: Record<string, unknown>;
      };
      assert.deepEqual(partly.overrides, { min_months_history: 5 });
      await runAdmin(env, ['policy', 'clear', '--lender', lender.id, '--product-type', 'rbf']);
      const after = (await runAdmin(env, ['policy', 'show', '--lender', lender.id])) as { policies: Record<string, unknown> };
      assert.deepEqual(after.policies, {});
      await assert.rejects(runAdmin(env, ['policy', 'clear', '--lender', lender.id, '--product-type', 'rbf']), /no overrides for rbf/);
    });

    it('a sandbox database refuses to issue a civ_live_ key, and a production server will not start on it', async () => {
      assert.deepEqual(await runAdmin(env, ['deployment', 'show']), { mode: 'sandbox', key_prefix: 'civ_test_' });
      const lender = await runAdmin(env, ['lender', 'create', '--name', 'Mode Capital']);
      await assert.rejects(
        runAdmin({ ...env, ...PRODUCTION }, ['key', 'create', '--lender', lender.id, '--role', 'lender']),
        /belongs to a sandbox deployment, which accepts only civ_test_ keys/,
      );
      await assert.rejects(
        startService(loadConfig({ DATABASE_URL: testDb.url, ...PRODUCTION }), createLogger({ level: 'silent' })),
        /SERVICE_MODE is production, but this database belongs to a sandbox deployment/,
      );
      assert.deepEqual(await runAdmin(env, ['key', 'list', '--lender', lender.id]), [], 'no key was issued');
    });

    it('signing-key rotate, list and retire; the running service publishes the new key', async () => {
      const before = (await runAdmin(env, ['signing-key', 'list'])) as Array<{ kid: string; retired_at: string | null }>;
      assert.equal(before.length, 1);
      const rotated = (await runAdmin(env, ['signing-key', 'rotate'])) as { kid: string; signs_from: string };
      service.tapeSigner.refresh();
      const jwks = await request(service.app).get('/.well-known/jwks.json');
      assert.deepEqual(jwks.body.keys.map((k: { kid: string }) => k.kid).sort(), [before[0]!.kid, rotated.kid].sort());
      await assert.rejects(runAdmin(env, ['signing-key', 'retire', '--kid', rotated.kid]), /newest key/);
      // The old key signs until the new one has been published for a refresh period (signed-tapes.test.ts retires it after that).
      await assert.rejects(runAdmin(env, ['signing-key', 'retire', '--kid', before[0]!.kid]), /still signs/);
      const listed = (await runAdmin(env, ['signing-key', 'list'])) as Array<{ kid: string; retired_at: string | null }>;
      assert.deepEqual(
        listed.map((k) => [k.kid, k.retired_at]),
        [
          [rotated.kid, null],
          [before[0]!.kid, null],
        ],
      );
    });

    it('gdpr audit lists the data-protection requests', async () => {
      assert.deepEqual(await runAdmin(env, ['gdpr', 'audit']), []);
    });
  });

  describe(`operator CLI on a production ${factory.name} database`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;

    before(async () => {
      testDb = await factory.create();
      const service = await startService(loadConfig({ DATABASE_URL: testDb.url, ...PRODUCTION }), createLogger({ level: 'silent' }));
      await service.close();
    });
    after(async () => {
      await testDb.drop();
    });

    it('refuses to issue a civ_test_ key; issues civ_live_ keys', async () => {
      const env = { DATABASE_URL: testDb.url, ...PRODUCTION };
      const lender = await runAdmin(env, ['lender', 'create', '--name', 'Live Capital']);
      await assert.rejects(
        runAdmin({ ...env, SERVICE_MODE: 'sandbox', ENCRYPTION_KEY: '' }, ['key', 'create', '--lender', lender.id, '--role', 'lender']),
        /belongs to a production deployment, which accepts only civ_live_ keys/,
      );
      const { api_key: key } = await runAdmin(env, ['key', 'create', '--lender', lender.id, '--role', 'lender']);
      assert.match(key, /^civ_live_/);
    });
  });
}
