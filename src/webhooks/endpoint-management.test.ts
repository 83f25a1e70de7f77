import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import request from 'supertest';
import { AccountsRepository } from '../accounts/accounts-repository.ts';
import * as admin from '../accounts/lender-admin.ts';
import { ManualClock } from '../platform/clock.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { adminContext, startService, type Service } from '../service.ts';
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';
import { makeTestCertificates, TestReceiver, type TestCertificates } from '../../test/support/test-receiver.ts';
import { verifyWebhookSignature } from './verify-signature.ts';

const HOUR = 60 * 60 * 1000;
const schemas = new URL('../../spec/schemas/', import.meta.url);
const ajv = new Ajv2020({ strict: false });
addFormats.default(ajv);
for (const folder of ['tape', 'events']) {
  for (const file of readdirSync(new URL(folder, schemas))) ajv.addSchema(JSON.parse(readFileSync(new URL(`${folder}/${file}`, schemas), 'utf8')));
}

for (const factory of testDatabases()) {
  describe(`webhook endpoint management on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let service: Service;
    let clock: ManualClock;
    let key: string;
    let otherKey: string;
    let certificates: TestCertificates;
    let receiver: TestReceiver;
    let receiverUrl: string;

    const as = (apiKey: string) => ({
      post: (path: string, body?: object) => {
        const r = request(service.app).post(`/api/v1${path}`).auth(apiKey, { type: 'bearer' });
        return body === undefined ? r : r.send(body);
      },
      get: (path: string) => request(service.app).get(`/api/v1${path}`).auth(apiKey, { type: 'bearer' }),
    });
    const api = () => as(key);
    const register = async (events: string[] = ['verification.expired']) => {
      const path = `/hook-${randomUUID()}`;
      const response = await api().post('/webhooks', { url: `${receiverUrl}${path}`, events });
      assert.equal(response.status, 201, response.text);
      return { ...(response.body as { webhook_id: string; secret: string; previous_secret_expires_at: string | null }), path };
    };
    /** A verification that expires at once under the sandbox trigger, so one event goes to the endpoint. */
    const oneEvent = async () => {
      const response = await api()
        .post('/verifications', { obligor_reference: `test-expire-${randomUUID().slice(0, 8)}`, creator_platforms: ['youtube'] })
        .set('Idempotency-Key', randomUUID());
      assert.equal(response.status, 201, response.text);
      clock.advance(10_000);
      await service.jobs.runDue();
      await service.deliveries.runDue();
    };

    before(async () => {
      testDb = await factory.create();
      certificates = makeTestCertificates();
      receiver = new TestReceiver(certificates);
      receiverUrl = await receiver.listen();
      clock = new ManualClock('2026-11-21T10:00:00.000Z');
      const config = loadConfig({
        DATABASE_URL: testDb.url,
        VALIDATE_RESPONSES: '1',
        WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
        SANDBOX_COMPLETE_DELAY_MS: '2000',
        WEBHOOK_TIMEOUT_MS: '1000',
        LOG_LEVEL: 'silent',
      });
      service = await startService(config, createLogger({ level: 'silent' }), { clock, webhookCa: certificates.ca });
    });
    beforeEach(async () => {
      const ctx = adminContext({ mode: 'sandbox' }, new AccountsRepository(service.db.knex), clock);
      const lender = await admin.createLender(ctx, { name: `Lender ${randomUUID()}` });
      key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
      const other = await admin.createLender(ctx, { name: `Other ${randomUUID()}` });
      otherKey = (await admin.createKey(ctx, { lenderId: other.id, role: 'lender' })).apiKey;
    });
    after(async () => {
      await service.close();
      await receiver.close();
      await testDb.drop();
    });

    it('GET /webhooks/{id}: the endpoint without its secret; another lender gets 404', async () => {
      const created = await register();
      const response = await api().get(`/webhooks/${created.webhook_id}`);
      assert.equal(response.status, 200, response.text);
      const { secret, path, ...expected } = created;
      void path;
      assert.deepEqual(response.body, expected);
      assert.equal(response.body.previous_secret_expires_at, null);
      assert.ok(!JSON.stringify(response.body).includes(secret));
      assert.equal((await as(otherKey).get(`/webhooks/${created.webhook_id}`)).status, 404);
    });

    it('lists endpoints oldest first in pages, with has_more; a foreign cursor is validation_error', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i += 1) {
        ids.push((await register()).webhook_id);
        clock.advance(1000);
      }
      const first = await api().get('/webhooks?limit=2');
      assert.equal(first.status, 200, first.text);
      assert.deepEqual(
        first.body.data.map((w: { webhook_id: string }) => w.webhook_id),
        ids.slice(0, 2),
      );
      assert.equal(first.body.has_more, true);
      const second = await api().get(`/webhooks?limit=2&starting_after=${ids[1]}`);
      assert.deepEqual(
        second.body.data.map((w: { webhook_id: string }) => w.webhook_id),
        ids.slice(2),
      );
      assert.equal(second.body.has_more, false);
      assert.equal((await api().get('/webhooks')).body.has_more, false);
      const foreign = await as(otherKey).get(`/webhooks?starting_after=${ids[0]}`);
      assert.equal(foreign.status, 400, foreign.text);
      assert.equal(foreign.body.error, 'validation_error');
    });

    it('P14 holds under concurrency: of 30 registrations sent at once, 20 are created and 10 refused; 20 endpoints exist', async () => {
      const responses = await Promise.all(
        Array.from({ length: 30 }, () => api().post('/webhooks', { url: `${receiverUrl}/hook-${randomUUID()}`, events: ['verification.expired'] })),
      );
      const statuses = responses.map((response) => response.status);
      assert.deepEqual([statuses.filter((status) => status === 201).length, statuses.filter((status) => status === 422).length], [20, 10], statuses.join(' '));
      assert.equal((await api().get('/webhooks?limit=100')).body.data.length, 20);
    });

    it('rotating: a new secret once; during the overlap both signatures, new first, either verifies; afterwards only the new one', async () => {
      const endpoint = await register();
      const rotated = await api().post(`/webhooks/${endpoint.webhook_id}/rotate-secret`, { overlap_seconds: 3600 });
      assert.equal(rotated.status, 200, rotated.text);
      const newSecret = rotated.body.secret as string;
      assert.match(newSecret, /^whsec_[A-Za-z0-9]{32,}$/);
      assert.notEqual(newSecret, endpoint.secret);
      assert.equal(rotated.body.previous_secret_expires_at, new Date(clock.now().getTime() + HOUR).toISOString());
      assert.equal((await api().get(`/webhooks/${endpoint.webhook_id}`)).body.previous_secret_expires_at, rotated.body.previous_secret_expires_at);

      await oneEvent();
      const during = receiver.to(endpoint.path).at(-1)!;
      const header = during.headers['x-service-signature']!;
      const [first, second] = header.split(', ');
      assert.ok(verifyWebhookSignature(during.rawBody, first, newSecret), 'the new secret signs first');
      assert.ok(verifyWebhookSignature(during.rawBody, second, endpoint.secret), 'then the old one');
      assert.ok(verifyWebhookSignature(during.rawBody, header, newSecret) && verifyWebhookSignature(during.rawBody, header, endpoint.secret));

      clock.advance(HOUR);
      assert.equal((await api().get(`/webhooks/${endpoint.webhook_id}`)).body.previous_secret_expires_at, null);
      await oneEvent();
      const after = receiver.to(endpoint.path).at(-1)!;
      assert.match(after.headers['x-service-signature']!, /^sha256=[0-9a-f]{64}$/);
      assert.ok(verifyWebhookSignature(after.rawBody, after.headers['x-service-signature'], newSecret));
      assert.ok(!verifyWebhookSignature(after.rawBody, after.headers['x-service-signature'], endpoint.secret));
    });

    it('rotating without a body overlaps one day; overlap 0 retires the old secret at once; a second rotation drops the oldest', async () => {
      const endpoint = await register();
      const first = await api().post(`/webhooks/${endpoint.webhook_id}/rotate-secret`);
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.previous_secret_expires_at, new Date(clock.now().getTime() + 24 * HOUR).toISOString());
      const second = await api().post(`/webhooks/${endpoint.webhook_id}/rotate-secret`, { overlap_seconds: 60 });
      await oneEvent();
      const header = receiver.to(endpoint.path).at(-1)!;
      assert.equal(header.headers['x-service-signature']!.split(',').length, 2);
      assert.ok(verifyWebhookSignature(header.rawBody, header.headers['x-service-signature'], first.body.secret));
      assert.ok(verifyWebhookSignature(header.rawBody, header.headers['x-service-signature'], second.body.secret));
      assert.ok(!verifyWebhookSignature(header.rawBody, header.headers['x-service-signature'], endpoint.secret), 'at most two secrets sign');
      const third = await api().post(`/webhooks/${endpoint.webhook_id}/rotate-secret`, { overlap_seconds: 0 });
      assert.equal(third.body.previous_secret_expires_at, null);
      await oneEvent();
      const last = receiver.to(endpoint.path).at(-1)!;
      assert.match(last.headers['x-service-signature']!, /^sha256=[0-9a-f]{64}$/);
      assert.ok(verifyWebhookSignature(last.rawBody, last.headers['x-service-signature'], third.body.secret));
    });

    it('rotate: overlap beyond 7 days or an unknown field is validation_error; another lender gets 404 and the secret stays', async () => {
      const endpoint = await register();
      for (const body of [{ overlap_seconds: 604801 }, { overlap_seconds: -1 }, { overlap: 5 }]) {
        const response = await api().post(`/webhooks/${endpoint.webhook_id}/rotate-secret`, body);
        assert.equal(response.status, 400, JSON.stringify(body));
        assert.equal(response.body.error, 'validation_error');
      }
      assert.equal((await as(otherKey).post(`/webhooks/${endpoint.webhook_id}/rotate-secret`)).status, 404);
      await oneEvent();
      const delivered = receiver.to(endpoint.path).at(-1)!;
      assert.ok(verifyWebhookSignature(delivered.rawBody, delivered.headers['x-service-signature'], endpoint.secret));
    });

    it('test event: a signed webhook.test valid against its schema, sent whatever the subscription, outside the delivery log', async () => {
      const endpoint = await register(['verification.completed']);
      const response = await api().post(`/webhooks/${endpoint.webhook_id}/test`);
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.succeeded, true);
      assert.equal(response.body.status_code, 200);
      assert.equal(response.body.error, null);
      const [received] = receiver.to(endpoint.path);
      assert.ok(received);
      assert.ok(verifyWebhookSignature(received.rawBody, received.headers['x-service-signature'], endpoint.secret));
      assert.equal(received.headers['x-service-event'], 'webhook.test');
      assert.equal(received.headers['x-service-delivery'], response.body.delivery_id);
      const payload = JSON.parse(received.rawBody.toString());
      const validate = ajv.getSchema('https://schemas.creator-income.example/events/webhook.test.json')!;
      assert.ok(validate(payload), ajv.errorsText(validate.errors));
      assert.equal(payload.event_id, response.body.event_id);
      assert.equal(payload.webhook_id, endpoint.webhook_id);
      assert.deepEqual((await api().get(`/webhooks/${endpoint.webhook_id}/deliveries`)).body.data, []);
    });

    it('test event to a failing receiver: 200 with succeeded false and its status; not retried', async () => {
      const endpoint = await register();
      receiver.answerWith(endpoint.path, 503);
      const response = await api().post(`/webhooks/${endpoint.webhook_id}/test`);
      assert.equal(response.status, 200, response.text);
      assert.deepEqual([response.body.succeeded, response.body.status_code], [false, 503]);
      clock.advance(HOUR);
      await service.deliveries.runDue();
      assert.equal(receiver.to(endpoint.path).length, 1);
      assert.equal((await as(otherKey).post(`/webhooks/${endpoint.webhook_id}/test`)).status, 404);
    });
  });
}
