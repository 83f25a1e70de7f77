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
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';
import { createLogger } from '../platform/logger.ts';
import { adminContext } from '../admin/admin-context.ts';
import { startService, type Service } from '../service.ts';
import { makeTestCertificates, TestReceiver, type TestCertificates } from '../../test/support/test-receiver.ts';
import { verifyWebhookSignature } from './verify-signature.ts';

const DELAY = 2000;
const eventSchemas = new URL('../../spec/schemas/', import.meta.url);
const ajv = new Ajv2020({ strict: false });
addFormats.default(ajv);
for (const folder of ['tape', 'events']) {
  for (const file of readdirSync(new URL(folder, eventSchemas))) ajv.addSchema(JSON.parse(readFileSync(new URL(`${folder}/${file}`, eventSchemas), 'utf8')));
}
const validateEvent = (name: string, payload: unknown) => {
  const validate = ajv.getSchema(`https://schemas.creator-income.example/events/${name}.json`)!;
  assert.ok(validate(payload), `${name}: ${ajv.errorsText(validate.errors)}`);
};

for (const factory of testDatabases()) {
  describe(`webhooks on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let service: Service;
    let clock: ManualClock;
    let key: string;
    let certificates: TestCertificates;
    let receiver: TestReceiver;
    let receiverUrl: string;

    const api = () => ({
      post: (path: string, body: object, headers: Record<string, string> = {}) =>
        request(service.app).post(`/api/v1${path}`).auth(key, { type: 'bearer' }).set(headers).send(body),
      get: (path: string) => request(service.app).get(`/api/v1${path}`).auth(key, { type: 'bearer' }),
      delete: (path: string) => request(service.app).delete(`/api/v1${path}`).auth(key, { type: 'bearer' }),
    });
    const createVerification = (reference: string) =>
      api().post('/verifications', { obligor_reference: reference, creator_platforms: ['youtube'] }, { 'Idempotency-Key': randomUUID() });
    const register = async (events: string[], path = `/hook-${randomUUID()}`) => {
      const response = await api().post('/webhooks', { url: `${receiverUrl}${path}`, events });
      assert.equal(response.status, 201, response.text);
      return { ...(response.body as { webhook_id: string; secret: string }), path };
    };
    /** Moves time on and lets the jobs and the sender do what is due, as the server's loops would. */
    const settle = async (ms = 0) => {
      clock.advance(ms);
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
        SANDBOX_COMPLETE_DELAY_MS: String(DELAY),
        WEBHOOK_RETRY_SCHEDULE: '0,60,300',
        WEBHOOK_TIMEOUT_MS: '500',
        LOG_LEVEL: 'silent',
      });
      service = await startService(config, createLogger({ level: 'silent' }), { clock, webhookCa: certificates.ca });
    });
    beforeEach(async () => {
      // A fresh lender per test: its endpoints see only its own events.
      const ctx = adminContext({ mode: 'sandbox' }, new AccountsRepository(service.db.knex), clock);
      const lender = await admin.createLender(ctx, { name: `Webhook Lender ${randomUUID()}` });
      key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
    });
    after(async () => {
      await service.close();
      await receiver.close();
      await testDb.drop();
    });

    it('registers an endpoint, shows its secret once and keeps it encrypted', async () => {
      const created = await register(['verification.completed']);
      assert.match(created.secret, /^whsec_[A-Za-z0-9]{32,}$/);
      const listed = await api().get('/webhooks');
      assert.deepEqual(
        listed.body.data.map((w: { webhook_id: string }) => w.webhook_id),
        [created.webhook_id],
      );
      assert.ok(!JSON.stringify(listed.body).includes(created.secret));
      const row = await service.db.knex('webhook_endpoints').where({ id: created.webhook_id }).first();
      assert.ok(!JSON.stringify(row).includes(created.secret.slice(6)));
    });

    it('refuses http targets with validation_error', async () => {
      const response = await api().post('/webhooks', { url: receiverUrl.replace('https', 'http'), events: ['verification.completed'] });
      assert.equal(response.status, 400);
      assert.equal(response.body.error, 'validation_error');
    });

    it('delivers one signed, schema-valid event per transition to the endpoints subscribed to it', async () => {
      const completed = await register(['verification.completed']);
      const failed = await register(['verification.failed']);
      const { body: ok } = await createVerification(`test-complete-${randomUUID()}`);
      const { body: ko } = await createVerification(`test-fail-${randomUUID()}`);
      const { body: synthetic } = await createVerification('demo-yt-mid');
      await settle(DELAY);
      assert.equal(receiver.to(completed.path).length, 2);
      assert.equal(receiver.to(failed.path).length, 1);
      for (const delivery of [...receiver.to(completed.path), ...receiver.to(failed.path)]) {
        const secret = delivery.path === completed.path ? completed.secret : failed.secret;
        assert.match(delivery.headers['x-service-signature']!, /^sha256=[0-9a-f]{64}$/);
        assert.ok(verifyWebhookSignature(delivery.rawBody, delivery.headers['x-service-signature'], secret));
        assert.match(delivery.headers['x-service-delivery']!, /^[0-9a-f-]{36}$/);
        const payload = JSON.parse(delivery.rawBody.toString());
        assert.equal(delivery.headers['x-service-event'], payload.event);
        validateEvent(payload.event, payload);
      }
      const completedIds = receiver
        .to(completed.path)
        .map((r) => JSON.parse(r.rawBody.toString()).verification_id)
        .sort();
      assert.deepEqual(completedIds, [ok.verification_id, synthetic.verification_id].sort());
      const failure = JSON.parse(receiver.to(failed.path)[0]!.rawBody.toString());
      assert.deepEqual([failure.verification_id, failure.reason, failure.data.status], [ko.verification_id, 'platform_error', 'failed']);
    });

    it('retries a failed attempt on the schedule with the same delivery id, then succeeds', async () => {
      const { webhook_id, path } = await register(['verification.completed']);
      receiver.answerWith(path, 500, 503);
      await createVerification('demo-stripe-micro');
      await settle();
      assert.equal(receiver.to(path).length, 1);
      await settle(59_000);
      assert.equal(receiver.to(path).length, 1, 'retried before the schedule said');
      await settle(1_000);
      await settle(240_000);
      assert.equal(receiver.to(path).length, 3);
      assert.equal(new Set(receiver.to(path).map((r) => r.headers['x-service-delivery'])).size, 1);
      assert.equal(new Set(receiver.to(path).map((r) => r.rawBody.toString())).size, 1);
      const log = await api().get(`/webhooks/${webhook_id}/deliveries`);
      assert.equal(log.status, 200);
      const [delivery] = log.body.data;
      assert.equal(delivery.status, 'succeeded');
      assert.deepEqual(
        delivery.attempts.map((a: { status_code: number }) => a.status_code),
        [500, 503, 200],
      );
    });

    it('fails a delivery after the last attempt, and replays it on request with a new delivery id', async () => {
      const { webhook_id, path } = await register(['verification.completed']);
      receiver.answerWith(path, 500, 500, 500);
      await createVerification('demo-yt-nano');
      await settle();
      await settle(60_000);
      await settle(240_000);
      await settle(3_600_000);
      assert.equal(receiver.to(path).length, 3);
      const log = await api().get(`/webhooks/${webhook_id}/deliveries`);
      const [failed] = log.body.data;
      assert.equal(failed.status, 'failed');
      assert.equal(failed.next_attempt_at, null);
      const replay = await api().post(`/webhooks/${webhook_id}/deliveries/${failed.delivery_id}/replay`, {});
      assert.equal(replay.status, 202, replay.text);
      assert.equal(replay.body.replay_of, failed.delivery_id);
      await settle();
      assert.equal(receiver.to(path).length, 4);
      const [last] = receiver.to(path).slice(-1);
      assert.notEqual(last!.headers['x-service-delivery'], failed.delivery_id);
      assert.equal(JSON.parse(last!.rawBody.toString()).event_id, failed.event_id);
      const again = await api().post(`/webhooks/${webhook_id}/deliveries/${failed.delivery_id}/replay`, {});
      assert.equal(again.status, 202);
      const pendingReplay = await api().post(`/webhooks/${webhook_id}/deliveries/${again.body.delivery_id}/replay`, {});
      assert.equal(pendingReplay.status, 422, 'a delivery still being attempted cannot be replayed');
      await settle();
    });

    it('counts a receiver that does not answer in time as a failed attempt', async () => {
      const { webhook_id, path } = await register(['verification.completed']);
      receiver.answerWith(path, { status: 200, delayMs: 1500 });
      await createVerification('seasonal_spikes');
      await settle();
      const [delivery] = (await api().get(`/webhooks/${webhook_id}/deliveries`)).body.data;
      assert.equal(delivery.status, 'pending');
      assert.equal(delivery.attempts[0].status_code, null);
      assert.match(delivery.attempts[0].error, /timeout/);
    });

    it('sends nothing more to a deleted endpoint', async () => {
      const { webhook_id, path } = await register(['verification.completed']);
      receiver.answerWith(path, 500);
      await createVerification('short_history_5mo');
      await settle();
      assert.equal((await api().delete(`/webhooks/${webhook_id}`)).status, 204);
      await settle(60_000);
      assert.equal(receiver.to(path).length, 1);
      assert.equal((await api().get(`/webhooks/${webhook_id}/deliveries`)).status, 404);
      assert.equal((await api().delete(`/webhooks/${webhook_id}`)).status, 404);
    });

    it("keeps the order of one verification's events to one endpoint", async () => {
      const { webhook_id, path } = await register(['verification.completed', 'verification.expired']);
      const { body: v } = await createVerification(`test-complete-${randomUUID()}`);
      await settle(DELAY);
      // A second event for the same verification, recorded while the first is still pending.
      receiver.answerWith(path, 500);
      const [first] = (await api().get(`/webhooks/${webhook_id}/deliveries`)).body.data;
      await service.db.knex('webhook_deliveries').where({ id: first.delivery_id }).update({ status: 'pending', next_attempt_at: clock.now().toISOString() });
      const laterEvent = await service.db.knex('events').where({ verification_id: v.verification_id }).first();
      await service.db.knex('events').insert({ ...laterEvent, sequence: undefined, id: `evt_${randomUUID().replace(/-/g, '')}` });
      const [copy] = await service.db.knex('events').where({ verification_id: v.verification_id }).orderBy('sequence', 'desc').limit(1);
      await service.db.knex('webhook_events').insert({ event_id: copy.id, lender_id: copy.lender_id, body: copy.payload });
      const copyDeliveryId = randomUUID();
      await service.db.knex('webhook_deliveries').insert({
        id: copyDeliveryId,
        webhook_id,
        lender_id: laterEvent.lender_id,
        event_id: copy.id,
        event_name: copy.name,
        verification_id: v.verification_id,
        event_sequence: copy.sequence,
        status: 'pending',
        attempts: 0,
        next_attempt_at: clock.now().toISOString(),
        created_at: clock.now().toISOString(),
      });
      const before = receiver.to(path).length;
      const sentSince = () =>
        receiver
          .to(path)
          .slice(before)
          .map((r) => r.headers['x-service-delivery']);
      await settle();
      assert.deepEqual(sentSince(), [first.delivery_id], 'the later event overtook the earlier one');
      // Its second failure waits for the third slot of the schedule (300 s after its first attempt).
      await settle(300_000);
      assert.deepEqual(sentSince(), [first.delivery_id, first.delivery_id, copyDeliveryId]);
    });
  });
}
