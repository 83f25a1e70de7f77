import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync, existsSync } from 'node:fs';
import { Writable } from 'node:stream';
import request from 'supertest';
import { AccountsRepository } from '../src/accounts/accounts-repository.ts';
import * as admin from '../src/accounts/lender-admin.ts';
import { GdprRepository } from '../src/gdpr/gdpr-repository.ts';
import { loadConfig, type Config } from '../src/platform/config.ts';
import { createLogger } from '../src/platform/logger.ts';
import { adminContext } from '../src/admin/admin-context.ts';
import { startService, type Service } from '../src/service.ts';
import { startGoogleSimulator, type GoogleSimulator } from './simulators/google.ts';
import { providerEnv } from './simulators/provider-env.ts';
import { startStripeSimulator, type StripeSimulator } from './simulators/stripe.ts';
import { bindingCookieOf, pressOnProviderPage } from './support/provider-page.ts';
import { testDatabases, type TestDatabase } from './support/test-databases.ts';
import { makeTestCertificates, TestReceiver, type TestCertificates } from './support/test-receiver.ts';

const PUBLIC_BASE_URL = 'https://verify.lender.example';

const lastMonths = (count: number, now = new Date()) =>
  Array.from({ length: count }, (_, i) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - count + i, 1)).toISOString().slice(0, 7));

/** Every value of every row of every table, as text: what an erasure must leave no trace of the creator in. */
async function everyStoredValue(service: Service): Promise<string> {
  const knex = service.db.knex;
  type Table = { name: string };
  const tables =
    service.db.dialect === 'sqlite'
      ? (await knex.raw<Table[]>("select name from sqlite_master where type = 'table'")).map((t) => t.name)
      : (await knex.raw<{ rows: Table[] }>("select tablename as name from pg_tables where schemaname = 'public'")).rows.map((t) => t.name);
  const dumps: string[] = [];
  for (const table of tables) dumps.push(`${table}: ${JSON.stringify(await knex(table).select())}`);
  return dumps.join('\n');
}

for (const factory of testDatabases()) {
  describe(`data protection: access, export and erasure through the provider simulators on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let google: GoogleSimulator;
    let stripe: StripeSimulator;
    let config: Config;
    let service: Service;
    let lenderKey: string;
    let gdprKey: string;
    let lenderId: string;
    const logLines: string[] = [];
    const months = lastMonths(24);

    before(async () => {
      testDb = await factory.create();
      google = await startGoogleSimulator();
      stripe = await startStripeSimulator();
      config = loadConfig({
        DATABASE_URL: testDb.url,
        SERVICE_MODE: 'production',
        ENCRYPTION_KEY: 'd'.repeat(64),
        PUBLIC_BASE_URL,
        VALIDATE_RESPONSES: '1',
        ...providerEnv(google, stripe),
      });
      const capture = new Writable({
        write(chunk, _encoding, done) {
          logLines.push(String(chunk));
          done();
        },
      });
      service = await startService(config, createLogger({ level: 'debug', destination: capture }));
      const ctx = adminContext(config, new AccountsRepository(service.db.knex));
      const lender = await admin.createLender(ctx, { name: 'Harbour Credit' });
      lenderId = lender.id;
      await admin.updateLender(ctx, { id: lender.id, rateLimit: 100000, burst: 10000 });
      lenderKey = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
      gdprKey = (await admin.createKey(ctx, { lenderId: lender.id, role: 'gdpr_admin' })).apiKey;
    });
    after(async () => {
      await service.close();
      await google.close();
      await stripe.close();
      await testDb.drop();
    });

    const create = async (obligorReference: string, platforms: string[]) => {
      const response = await request(service.app)
        .post('/api/v1/verifications')
        .auth(lenderKey, { type: 'bearer' })
        .set('Idempotency-Key', randomUUID())
        .send({ obligor_reference: obligorReference, creator_platforms: platforms });
      assert.equal(response.status, 201, response.text);
      return { id: response.body.verification_id as string, path: new URL(response.body.consent_url).pathname };
    };
    const connect = async (path: string, platform: 'youtube' | 'stripe', button: string, account: string) => {
      const start = await request(service.app).post(`${path}/connect/${platform}`);
      assert.equal(start.status, 303, start.text);
      const callback = await pressOnProviderPage(start.headers.location!, button, account);
      const back = await request(service.app).get(`${callback.pathname}${callback.search}`).set('Cookie', bindingCookieOf(start.headers['set-cookie']));
      assert.equal(back.status, 303);
    };
    /** A creator who connected YouTube and Stripe and whose verification completed, with the identifiers that name them. */
    const connectedCreator = async () => {
      const email = `Creator.${randomUUID().slice(0, 8)}+loans@Example.org`;
      const accountId = `acct_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
      const reference = `obligor-${randomUUID()}`;
      google.addAccount({
        email,
        channelId: `UC${randomUUID().slice(0, 10)}`,
        currency: 'EUR',
        monthlyRevenue: Object.fromEntries(months.map((m) => [m, 1500])),
      });
      stripe.addAccount({
        accountId,
        email,
        transactions: months.map((m) => ({ amount: 90000, currency: 'eur', created: Date.parse(`${m}-15T12:00:00Z`) / 1000, type: 'charge' as const })),
      });
      const { id, path } = await create(reference, ['youtube', 'stripe']);
      await connect(path, 'youtube', 'Allow', email);
      await connect(path, 'stripe', 'Connect', accountId);
      assert.equal((await request(service.app).post(`${path}/complete`)).status, 303);
      await service.jobs.runDue();
      const verification = (await request(service.app).get(`/api/v1/verifications/${id}`).auth(lenderKey, { type: 'bearer' })).body;
      assert.equal(verification.status, 'completed', JSON.stringify(verification));
      return { id, path, email, accountId, reference };
    };
    const gdpr = {
      access: (query: Record<string, string>) => request(service.app).get('/api/v1/gdpr/access').query(query).auth(gdprKey, { type: 'bearer' }),
      export: (query: Record<string, string>) => request(service.app).get('/api/v1/gdpr/export').query(query).auth(gdprKey, { type: 'bearer' }),
      erase: (body: Record<string, string>) => request(service.app).post('/api/v1/gdpr/erase').send(body).auth(gdprKey, { type: 'bearer' }),
    };

    it('finds the creator by the email of a connected account, in any case, and reports connections, income, tape and events', async () => {
      const creator = await connectedCreator();
      const response = await gdpr.access({ email: creator.email.toUpperCase() });
      assert.equal(response.status, 200, response.text);
      const [record] = response.body.verifications;
      assert.equal(response.body.verifications.length, 1);
      assert.equal(record.verification.verification_id, creator.id);
      assert.deepEqual(
        record.platform_connections.map((c: { platform: string; account_email: string; account_id: string | null }) => [
          c.platform,
          c.account_email,
          c.account_id,
        ]),
        [
          ['stripe', creator.email, creator.accountId],
          ['youtube', creator.email, null],
        ],
      );
      assert.ok(record.platform_connections.every((c: { scopes: string[] }) => c.scopes.length > 0));
      assert.equal(record.income.length, 48, '24 months from each platform');
      assert.equal(record.tapes.length, 1);
      assert.deepEqual(
        record.webhook_events.map((e: { event: string }) => e.event),
        ['verification.completed'],
      );
      assert.ok(!/ya29|token_ciphertext|access_token/i.test(response.text), 'no token in the report');
      const exported = await gdpr.export({ obligor_id: creator.reference });
      assert.equal(exported.status, 200);
      assert.deepEqual(exported.body.report.verifications, response.body.verifications);
    });

    it('refuses an email and an obligor_id that name different creators', async () => {
      const one = await connectedCreator();
      const other = await connectedCreator();
      const response = await gdpr.access({ email: one.email, obligor_id: other.reference });
      assert.equal(response.status, 400, response.text);
      assert.equal(response.body.error, 'validation_error');
    });

    it('erases everything about the creator, revokes the grants at both providers, and leaves no identifier in any table', async () => {
      const creator = await connectedCreator();
      // A second verification of the same creator, still waiting for consent.
      await create(creator.reference, ['stripe']);
      const revocationsBefore = google.revocations.length;
      const response = await gdpr.erase({ obligor_id: creator.reference });
      assert.equal(response.status, 200, response.text);
      const { counts } = response.body;
      assert.deepEqual(
        [
          counts.verifications,
          counts.tapes,
          counts.oauth_tokens,
          counts.income_records,
          counts.provider_grants_revoked,
          counts.provider_grants_pending_revocation,
        ],
        [2, 1, 2, 48, 2, 0],
      );
      assert.equal(google.revocations.length - revocationsBefore, 1);
      assert.ok(stripe.deauthorizations.some((d) => d.accountId === creator.accountId));

      const stored = await everyStoredValue(service);
      for (const identifier of [creator.reference, creator.email, creator.email.toLowerCase(), creator.accountId, creator.id]) {
        assert.ok(!stored.includes(identifier), `${identifier} is still stored`);
      }
      assert.equal((await gdpr.erase({ obligor_id: creator.reference })).status, 404);
      assert.equal((await gdpr.access({ email: creator.email })).status, 404);

      const audit = await new GdprRepository(service.db.knex).list(lenderId, 100);
      const erasure = audit.find((e) => e.receiptId === response.body.receipt_id);
      assert.ok(erasure && erasure.operation === 'erase' && erasure.counts.verifications === 2);
      assert.ok(
        !JSON.stringify(audit).includes(creator.reference) && !JSON.stringify(audit).includes(creator.email.toLowerCase()),
        'the audit names the creator',
      );
      const logs = logLines.join('');
      for (const identifier of [creator.reference, creator.email, creator.email.toLowerCase()])
        assert.ok(!logs.includes(identifier), `${identifier} was logged`);
    });

    it('a provider that refuses the revocation never blocks the erasure: the grant is retried until revoked', async () => {
      const creator = await connectedCreator();
      stripe.inject('server_error', { times: 1, accountId: creator.accountId });
      const response = await gdpr.erase({ email: creator.email });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual([response.body.counts.provider_grants_revoked, response.body.counts.provider_grants_pending_revocation], [1, 1]);
      assert.equal((await service.db.knex('provider_revocations')).length, 1);
      assert.ok(!stripe.deauthorizations.some((d) => d.accountId === creator.accountId));
      await service.jobs.runDue();
      assert.ok(
        stripe.deauthorizations.some((d) => d.accountId === creator.accountId),
        'the retry deauthorized the account',
      );
      assert.equal((await service.db.knex('provider_revocations')).length, 0);
    });

    it('stops a verification that is still processing: no late tape and no late event', async () => {
      const email = `processing-${randomUUID()}@example.org`;
      google.addAccount({ email, channelId: 'UCprocessing', currency: 'EUR', monthlyRevenue: { [months[23]!]: 100 } });
      const reference = `obligor-${randomUUID()}`;
      const { id, path } = await create(reference, ['youtube']);
      await connect(path, 'youtube', 'Allow', email);
      assert.equal((await request(service.app).post(`${path}/complete`)).status, 303);
      // The income is being fetched (slowly) when the erasure arrives.
      google.inject('slow', { slowMs: 1500, email });
      const collection = service.jobs.runDue();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const erased = await gdpr.erase({ obligor_id: reference });
      assert.equal(erased.status, 200, erased.text);
      await collection;
      assert.equal(await service.db.knex('tapes').where({ verification_id: id }).first(), undefined);
      assert.equal((await service.db.knex('events').where({ verification_id: id })).length, 0);
      assert.equal((await service.db.knex('verifications').where({ id })).length, 0);
    });

    if (factory.name === 'sqlite') {
      it('leaves no byte of an erased creator in the SQLite files after a clean shutdown (secure_delete)', async () => {
        const creator = await connectedCreator();
        assert.equal((await gdpr.erase({ obligor_id: creator.reference })).status, 200);
        await service.close();
        const file = testDb.url.slice('sqlite:'.length);
        const bytes = [file, `${file}-wal`].filter(existsSync).map((f) => readFileSync(f));
        for (const identifier of [creator.reference, creator.accountId]) {
          assert.ok(!bytes.some((b) => b.includes(identifier)), `${identifier} lingers in the database file`);
        }
        service = await startService(config, createLogger({ level: 'silent' }));
      });
    }
  });
}

for (const factory of testDatabases()) {
  describe(`data protection: erasure during a webhook delivery on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let certificates: TestCertificates;
    let receiver: TestReceiver;
    let receiverUrl: string;
    let service: Service;
    let lenderKey: string;
    let gdprKey: string;

    before(async () => {
      testDb = await factory.create();
      certificates = makeTestCertificates();
      receiver = new TestReceiver(certificates);
      receiverUrl = await receiver.listen();
      const config = loadConfig({ DATABASE_URL: testDb.url, VALIDATE_RESPONSES: '1', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' });
      service = await startService(config, createLogger({ level: 'silent' }), { webhookCa: certificates.ca });
      const ctx = adminContext(config, new AccountsRepository(service.db.knex));
      const lender = await admin.createLender(ctx, { name: 'Harbour Credit' });
      lenderKey = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
      gdprKey = (await admin.createKey(ctx, { lenderId: lender.id, role: 'gdpr_admin' })).apiKey;
    });
    after(async () => {
      await service.close();
      await receiver.close();
      await testDb.drop();
    });

    it('erases a creator while a webhook delivery about them is in flight: the delivery leaves no trace and the sender carries on', async () => {
      const path = `/in-flight-${randomUUID()}`;
      const registered = await request(service.app)
        .post('/api/v1/webhooks')
        .auth(lenderKey, { type: 'bearer' })
        .send({ url: `${receiverUrl}${path}`, events: ['verification.completed'] });
      assert.equal(registered.status, 201, registered.text);
      // The receiver takes its time over the delivery, so it is still being sent during the erasure.
      receiver.answerWith(path, { status: 200, delayMs: 1000 });
      // A synthetic creator completes at creation, with its event and so its delivery.
      const created = await request(service.app)
        .post('/api/v1/verifications')
        .auth(lenderKey, { type: 'bearer' })
        .set('Idempotency-Key', randomUUID())
        .send({ obligor_reference: 'demo-yt-mid', creator_platforms: ['youtube'] });
      assert.equal(created.status, 201, created.text);
      const sending = service.deliveries.runDue();
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(receiver.to(path).length, 1, 'the delivery is in flight');
      const erased = await request(service.app).post('/api/v1/gdpr/erase').send({ obligor_id: 'demo-yt-mid' }).auth(gdprKey, { type: 'bearer' });
      assert.equal(erased.status, 200, erased.text);
      assert.equal(erased.body.counts.webhook_deliveries, 1);
      // The sender finishes its pass without failing on the delivery that vanished under it.
      assert.equal(await sending, 1);
      assert.equal((await service.db.knex('webhook_deliveries')).length, 0);
      assert.equal((await service.db.knex('webhook_delivery_attempts')).length, 0);
    });
  });
}
