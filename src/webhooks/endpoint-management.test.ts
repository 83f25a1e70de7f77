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
import { adminContext } from '../admin/admin-context.ts';
import { startService, type Service } from '../service.ts';
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
      patch: (path: string, body: unknown) =>
        request(service.app)
          .patch(`/api/v1${path}`)
          .auth(apiKey, { type: 'bearer' })
          .send(body as object),
    });
    type LoggedDelivery = { delivery_id: string; verification_id: string; status: string; attempts: unknown[]; next_attempt_at: string | null };
    const log = async (webhookId: string) => (await api().get(`/webhooks/${webhookId}/deliveries`)).body.data as LoggedDelivery[];
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

    it('PATCH url and events: GET shows the change; the id, secret and delivery log stay; later events follow the new url and list', async () => {
      const endpoint = await register(['verification.expired']);
      await oneEvent();
      assert.equal(receiver.to(endpoint.path).length, 1);
      const movedPath = `/moved-${randomUUID()}`;
      const moved = await api().patch(`/webhooks/${endpoint.webhook_id}`, { url: `${receiverUrl}${movedPath}` });
      assert.equal(moved.status, 200, moved.text);
      assert.deepEqual(moved.body, { ...(await api().get(`/webhooks/${endpoint.webhook_id}`)).body, url: `${receiverUrl}${movedPath}` });
      assert.equal(moved.body.enabled, true);
      assert.equal(moved.body.secret, undefined, 'a PATCH never shows the secret');

      await oneEvent();
      assert.equal(receiver.to(endpoint.path).length, 1, 'nothing more at the old url');
      const [atNew] = receiver.to(movedPath);
      assert.ok(atNew, 'the next event went to the new url');
      assert.ok(verifyWebhookSignature(atNew.rawBody, atNew.headers['x-service-signature'], endpoint.secret), 'signed with the unchanged secret');
      assert.equal((await log(endpoint.webhook_id)).length, 2, 'the delivery log kept the delivery to the old url');

      const resubscribed = await api().patch(`/webhooks/${endpoint.webhook_id}`, { events: ['verification.completed'] });
      assert.deepEqual(resubscribed.body.events, ['verification.completed']);
      await oneEvent();
      assert.equal(receiver.to(movedPath).length, 1, 'an expiry is no longer subscribed to');
      assert.equal((await log(endpoint.webhook_id)).length, 2);
    });

    it('PATCH enabled false: no delivery for events meanwhile, pending ones held unattempted; enabled true sends the held ones, then new events', async () => {
      const endpoint = await register(['verification.expired']);
      receiver.answerWith(endpoint.path, 503);
      await oneEvent();
      const [pending] = await log(endpoint.webhook_id);
      assert.equal(pending?.status, 'pending');
      assert.ok(pending.next_attempt_at, 'a retry is scheduled');

      const disabled = await api().patch(`/webhooks/${endpoint.webhook_id}`, { enabled: false });
      assert.equal(disabled.status, 200, disabled.text);
      assert.equal(disabled.body.enabled, false);
      assert.equal((await api().get('/webhooks')).body.data.find((w: { webhook_id: string }) => w.webhook_id === endpoint.webhook_id).enabled, false);
      await oneEvent();
      clock.advance(2 * HOUR);
      await service.deliveries.runDue();
      assert.equal(receiver.to(endpoint.path).length, 1, 'no attempt while disabled, neither the retry nor the new event');
      const held = await log(endpoint.webhook_id);
      assert.deepEqual(
        held.map((d) => [d.delivery_id, d.status, d.attempts.length, d.next_attempt_at]),
        [[pending.delivery_id, 'pending', 1, null]],
        'the event recorded while disabled has no delivery; the pending one waits unscheduled',
      );

      const enabled = await api().patch(`/webhooks/${endpoint.webhook_id}`, { enabled: true });
      assert.equal(enabled.body.enabled, true);
      await service.deliveries.runDue();
      assert.equal(receiver.to(endpoint.path).length, 2, 'the held delivery is sent on enabling');
      assert.equal(JSON.parse(receiver.to(endpoint.path)[1]!.rawBody.toString()).verification_id, pending.verification_id);
      await oneEvent();
      const after = await log(endpoint.webhook_id);
      assert.deepEqual(
        after.map((d) => d.status),
        ['succeeded', 'succeeded'],
        'the held delivery and the next event; none for the event while disabled',
      );
      assert.equal(receiver.to(endpoint.path).length, 3);
    });

    it('an attempt under way when the endpoint is disabled: its retry is held, not scheduled, and sent on enabling', async () => {
      const endpoint = await register(['verification.expired']);
      receiver.answerWith(endpoint.path, { status: 503, delayMs: 300 });
      const response = await api()
        .post('/verifications', { obligor_reference: `test-expire-${randomUUID().slice(0, 8)}`, creator_platforms: ['youtube'] })
        .set('Idempotency-Key', randomUUID());
      assert.equal(response.status, 201, response.text);
      clock.advance(10_000);
      await service.jobs.runDue();
      const sending = service.deliveries.runDue();
      while (receiver.to(endpoint.path).length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal((await api().patch(`/webhooks/${endpoint.webhook_id}`, { enabled: false })).status, 200);
      await sending;
      const [held] = await log(endpoint.webhook_id);
      assert.deepEqual([held?.status, held?.attempts.length, held?.next_attempt_at], ['pending', 1, null]);
      clock.advance(2 * HOUR);
      await service.deliveries.runDue();
      assert.equal(receiver.to(endpoint.path).length, 1, 'the retry waits while the endpoint is disabled');
      await api().patch(`/webhooks/${endpoint.webhook_id}`, { enabled: true });
      await service.deliveries.runDue();
      assert.equal(receiver.to(endpoint.path).length, 2);
      assert.equal((await log(endpoint.webhook_id))[0]?.status, 'succeeded');
    });

    it('PATCHes sent at once, disabling and enabling: the held deliveries always agree with the state the endpoint ends in', async () => {
      for (let round = 0; round < 3; round += 1) {
        const endpoint = await register(['verification.expired']);
        receiver.answerWith(endpoint.path, 503);
        await oneEvent();
        const responses = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            api().patch(`/webhooks/${endpoint.webhook_id}`, i % 5 === 4 ? { url: `${receiverUrl}${endpoint.path}` } : { enabled: i % 2 === 0 }),
          ),
        );
        assert.deepEqual([...new Set(responses.map((r) => r.status))], [200]);
        const { enabled } = (await api().get(`/webhooks/${endpoint.webhook_id}`)).body as { enabled: boolean };
        const [pending] = await log(endpoint.webhook_id);
        assert.equal(pending?.status, 'pending');
        assert.equal(pending.next_attempt_at === null, !enabled, `enabled ${enabled}, next_attempt_at ${pending.next_attempt_at}`);
        await api().patch(`/webhooks/${endpoint.webhook_id}`, { enabled: true });
        clock.advance(HOUR);
        await service.deliveries.runDue();
        assert.equal((await log(endpoint.webhook_id))[0]?.status, 'succeeded', 'sent once enabled');
      }
    });

    it('a replay asked for while disabled waits with the other held deliveries', async () => {
      const endpoint = await register(['verification.expired']);
      await oneEvent();
      const [done] = await log(endpoint.webhook_id);
      await api().patch(`/webhooks/${endpoint.webhook_id}`, { enabled: false });
      const replay = await api().post(`/webhooks/${endpoint.webhook_id}/deliveries/${done!.delivery_id}/replay`);
      assert.equal(replay.status, 202, replay.text);
      assert.equal(replay.body.next_attempt_at, null);
      await service.deliveries.runDue();
      assert.equal(receiver.to(endpoint.path).length, 1);
      await api().patch(`/webhooks/${endpoint.webhook_id}`, { enabled: true });
      await service.deliveries.runDue();
      assert.equal(receiver.to(endpoint.path).length, 2);
    });

    it('PATCH refusals: a url the target guard refuses, http, no field, an unknown field: 400; another lender or an unknown id: 404, and nothing changes', async () => {
      const endpoint = await register(['verification.expired']);
      const before = (await api().get(`/webhooks/${endpoint.webhook_id}`)).body;
      for (const url of ['https://169.254.169.254/latest/meta-data', 'https://[fe80::1]/hook', 'http://example.com/hook', `${receiverUrl}/hook#fragment`]) {
        const response = await api().patch(`/webhooks/${endpoint.webhook_id}`, { url });
        assert.equal(response.status, 400, `${url}: ${response.text}`);
        assert.equal(response.body.error, 'validation_error', url);
        assert.match(response.text, /url/);
      }
      for (const body of [
        {},
        { secret: 'whsec_mine00000000000000000000000000000000' },
        { events: [] },
        { events: ['verification.unknown'] },
        { enabled: 'no' },
      ]) {
        const response = await api().patch(`/webhooks/${endpoint.webhook_id}`, body);
        assert.equal(response.status, 400, `${JSON.stringify(body)}: ${response.text}`);
      }
      const foreign = await as(otherKey).patch(`/webhooks/${endpoint.webhook_id}`, { enabled: false, url: `${receiverUrl}/stolen` });
      assert.equal(foreign.status, 404, foreign.text);
      assert.equal(foreign.body.error, 'not_found');
      assert.equal((await api().patch('/webhooks/whk_neverissued00000000', { enabled: false })).status, 404);
      assert.deepEqual((await api().get(`/webhooks/${endpoint.webhook_id}`)).body, before);
      await oneEvent();
      assert.equal(receiver.to(endpoint.path).length, 1, 'still enabled, still at its url');
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
