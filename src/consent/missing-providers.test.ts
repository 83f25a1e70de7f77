import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import request from 'supertest';
import { AccountsRepository } from '../accounts/accounts-repository.ts';
import * as admin from '../accounts/lender-admin.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { adminContext } from '../admin/admin-context.ts';
import { startService, type Service } from '../service.ts';
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';

/**
 * A production service started without a platform's credentials (issue 16): it starts, warns
 * loudly, and the consent page says the platform cannot be connected in place of its button; a
 * stale click leads back to that page, never to an error page.
 */

const PRODUCTION = { SERVICE_MODE: 'production', ENCRYPTION_KEY: 'e'.repeat(64), VALIDATE_RESPONSES: '1' };

async function started(env: Record<string, string>, testDb: TestDatabase) {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const service = await startService(loadConfig({ DATABASE_URL: testDb.url, ...PRODUCTION, ...env }), createLogger({ level: 'info', destination }));
  const ctx = adminContext({ mode: 'production' }, new AccountsRepository(service.db.knex));
  const lender = await admin.createLender(ctx, { name: 'Northwind Capital' });
  const key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
  const warnings = lines.map((line) => JSON.parse(line) as { level: number; msg: string; platform?: string }).filter((entry) => entry.level === 40);
  return { service, key, warnings };
}

async function consentPath(service: Service, key: string, platforms: string[]): Promise<string> {
  const response = await request(service.app)
    .post('/api/v1/verifications')
    .auth(key, { type: 'bearer' })
    .set('Idempotency-Key', randomUUID())
    .send({ obligor_reference: `obligor-${randomUUID()}`, creator_platforms: platforms });
  assert.equal(response.status, 201, response.text);
  return new URL(response.body.consent_url as string).pathname;
}

describe('production without provider credentials', function () {
  this.timeout(60_000);
  const databases: TestDatabase[] = [];
  const services: Service[] = [];
  const database = async () => {
    const testDb = await testDatabases()[0]!.create();
    databases.push(testDb);
    return testDb;
  };
  after(async () => {
    for (const service of services) await service.close();
    for (const testDb of databases) await testDb.drop();
  });

  it('no GOOGLE_* or STRIPE_*: starts with a warning per platform, and refuses a creation whose creator could connect nothing (422)', async () => {
    const { service, key, warnings } = await started({}, await database());
    services.push(service);
    assert.deepEqual(
      warnings.map((w) => w.platform),
      ['youtube', 'stripe'],
    );
    assert.match(warnings[0]!.msg, /PRODUCTION WITHOUT YOUTUBE CREDENTIALS.*GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET/);
    assert.deepEqual(
      service.unavailablePlatforms.map((p) => p.platform),
      ['youtube', 'stripe'],
    );

    // Nothing the creator could connect: refused at creation, and nothing is created (P32).
    const reference = `obligor-${randomUUID()}`;
    const refused = await request(service.app)
      .post('/api/v1/verifications')
      .auth(key, { type: 'bearer' })
      .set('Idempotency-Key', randomUUID())
      .send({ obligor_reference: reference, creator_platforms: ['youtube', 'stripe'] });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.error, 'unprocessable');
    assert.match(refused.body.message as string, /cannot connect youtube or stripe at the moment/);
    const listed = await request(service.app).get(`/api/v1/verifications?obligor_reference=${reference}`).auth(key, { type: 'bearer' });
    assert.deepEqual(listed.body.data, []);
  });

  it('a link made while a platform was configured, opened once none is: says plainly that nothing can be connected now', async () => {
    const testDb = await database();
    const configured = await started({ GOOGLE_CLIENT_ID: 'google-client', GOOGLE_CLIENT_SECRET: 'google-secret' }, testDb);
    const path = await consentPath(configured.service, configured.key, ['youtube']);
    await configured.service.close();
    const { service } = await started({}, testDb);
    services.push(service);
    const page = await request(service.app).get(path);
    assert.equal(page.status, 200);
    assert.match(page.text, /id="nothing-to-connect"[^>]*>This service cannot connect any of the platforms Northwind Capital asked for at the moment/);
    assert.doesNotMatch(page.text, /the other platforms/, 'no note pointing to other platforms');
    assert.doesNotMatch(page.text, /\/connect\/|\/complete"/, 'nothing to connect or finish');
    assert.match(page.text, /Not available/);
    assert.match(page.text, new RegExp(`href="${path}/decline"`), 'declining stays possible');

    const click = await request(service.app).post(`${path}/connect/youtube`);
    assert.equal(click.status, 303, 'a stale form leads back to the page, not to an error page');
    assert.equal(click.headers.location, path);

    const german = await request(service.app).get(path).set('Accept-Language', 'de');
    assert.match(german.text, /Dieser Dienst kann derzeit keine der Plattformen verbinden/);
  });

  it('only Stripe configured: Stripe keeps its button, YouTube says it cannot be connected', async () => {
    const { service, key, warnings } = await started({ STRIPE_CLIENT_ID: 'ca_test', STRIPE_SECRET_KEY: 'sk_test_x' }, await database());
    services.push(service);
    assert.deepEqual(
      warnings.map((w) => w.platform),
      ['youtube'],
    );
    const path = await consentPath(service, key, ['youtube', 'stripe']);
    const page = await request(service.app).get(path);
    assert.match(page.text, new RegExp(`action="${path}/connect/stripe"`));
    assert.doesNotMatch(page.text, /\/connect\/youtube/);
    assert.match(page.text, /id="unavailable-youtube"[^>]*>YouTube cannot be connected through this service at the moment/);
    assert.doesNotMatch(page.text, /nothing-to-connect/);
    // YouTube alone is refused at creation: nothing of it could be connected.
    const alone = await request(service.app)
      .post('/api/v1/verifications')
      .auth(key, { type: 'bearer' })
      .set('Idempotency-Key', randomUUID())
      .send({ obligor_reference: `obligor-${randomUUID()}`, creator_platforms: ['youtube'] });
    assert.deepEqual([alone.status, alone.body.error], [422, 'unprocessable']);
  });
});
