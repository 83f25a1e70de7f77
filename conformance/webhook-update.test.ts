import assert from 'node:assert/strict';
import { assertError } from './assertions.ts';
import { forEachPrivateTargetsRefusedTarget, forEachTarget, requireKey, requireSandbox, type ApiResponse, type Target } from './harness.ts';
import { SYNTHETIC_CREATORS } from './sandbox.ts';
import { verifySignature } from './webhook-receiver.ts';
import {
  attemptWaitMs,
  finished,
  placeholderUrl,
  requireRetriesWithin,
  requireWebhooks,
  WEBHOOKS_PATH,
  WebhookSession,
  type Delivery,
  type ReceiverEndpoint,
  type WebhookResource,
} from './webhooks.ts';

/**
 * PATCH /webhooks/{id} (P29): a new url (checked as at registration), events or state, keeping the
 * id, the secret and the delivery log. A disabled endpoint gets no delivery for the events recorded
 * while it is disabled; its pending deliveries wait, unattempted, and are sent when it is enabled
 * again. Each test observes what a later request or the receiver sees.
 */

type Webhook = WebhookResource & { enabled: boolean; previous_secret_expires_at: string | null };

const patch = (session: WebhookSession, webhookId: string, body: unknown, as?: 'otherLender') =>
  session.request('PATCH', `${WEBHOOKS_PATH}/${encodeURIComponent(webhookId)}`, { json: body, ...(as ? { as } : {}) });

const shown = async (session: WebhookSession, webhookId: string): Promise<Webhook> => {
  const response = await session.request('GET', `${WEBHOOKS_PATH}/${encodeURIComponent(webhookId)}`);
  assert.equal(response.status, 200, response.text);
  return response.json as Webhook;
};

/** A validation_error about `url` (the message or details name it). */
function assertUrlRefused(response: ApiResponse, url: string): void {
  const body = assertError(response, 400, 'validation_error');
  assert.match(JSON.stringify(body), /\burl\b/, `the refusal of ${url} names the url: ${response.text}`);
}

forEachTarget((target: Target) => {
  let session: WebhookSession;
  const synthetic = SYNTHETIC_CREATORS[1].reference;

  beforeEach(async function () {
    this.timeout(30_000);
    session = await WebhookSession.open(target);
  });
  afterEach(async function () {
    this.timeout(30_000);
    await session?.cleanup();
  });

  describe('happy and errors: updating a webhook endpoint (P29)', () => {
    it('PATCH url and events: 200 with the endpoint as changed, no secret; GET /webhooks/{id} and the list show it; the id stays [op:updateWebhook 200]', async () => {
      const created = await session.register(placeholderUrl('patch-before'), ['tape.updated']);
      assert.equal((created as unknown as Webhook).enabled, true, 'a new endpoint is enabled');
      const url = placeholderUrl('patch-after');
      const response = await patch(session, created.webhook_id, { url, events: ['verification.cancelled', 'tape.updated'] });
      assert.equal(response.status, 200, response.text);
      const changed = response.json as Webhook;
      assert.deepEqual({ ...changed }, { ...(await shown(session, created.webhook_id)) }, 'the answer is what GET shows');
      assert.deepEqual(
        [changed.webhook_id, changed.url, changed.events, changed.enabled, changed.created_at],
        [created.webhook_id, url, ['verification.cancelled', 'tape.updated'], true, created.created_at],
      );
      assert.ok(!('secret' in changed) && !response.text.includes(created.secret), 'a PATCH never shows the secret');
      const listed = ((await session.list()).json as { data: Webhook[] }).data.find((w) => w.webhook_id === created.webhook_id);
      assert.deepEqual(listed, changed);
      const disabled = await patch(session, created.webhook_id, { enabled: false });
      assert.deepEqual(disabled.json, { ...changed, enabled: false }, 'only enabled changed');
      assert.equal((await shown(session, created.webhook_id)).enabled, false);
    });

    it('a body without a field, an unknown field, empty or unknown events, a non-boolean enabled, a non-https url: 400 validation_error, nothing changed [op:updateWebhook 400 validation_error]', async () => {
      const created = await session.register(placeholderUrl('patch-refusals'), ['tape.updated']);
      const before = await shown(session, created.webhook_id);
      for (const body of [{}, { secret: 'whsec_mine0000000000000000000000000000' }, { events: [] }, { events: ['verification.unknown'] }, { enabled: 'no' }]) {
        assertError(await patch(session, created.webhook_id, body), 400, 'validation_error');
      }
      for (const url of ['http://8.8.8.8/hook', 'ftp://8.8.8.8/hook', 'https://8.8.8.8/hook#fragment', 'https://user:pass@8.8.8.8/hook']) {
        assertUrlRefused(await patch(session, created.webhook_id, { url, enabled: false }), url);
      }
      assert.deepEqual(await shown(session, created.webhook_id), before, 'a refused PATCH changes nothing, not even the fields beside the bad one');
    });

    it('the target guard applies to a new url as at registration: metadata and link-local targets are refused [op:updateWebhook 400 validation_error]', async () => {
      const created = await session.register(placeholderUrl('patch-metadata'), ['tape.updated']);
      for (const url of ['https://169.254.169.254/latest/meta-data/', 'https://[fe80::1]/', 'https://metadata.google.internal/', 'https://0.0.0.0/']) {
        assertUrlRefused(await patch(session, created.webhook_id, { url }), url);
      }
      assert.equal((await shown(session, created.webhook_id)).url, created.url);
    });

    it("another lender's key: 404 not_found as for an id never issued, and the endpoint is unchanged [op:updateWebhook 404 not_found]", async function () {
      const created = await session.register(placeholderUrl('patch-tenant'), ['tape.updated']);
      const before = await shown(session, created.webhook_id);
      assertError(await patch(session, 'whk_neverissued00000000', { enabled: false }), 404, 'not_found');
      requireKey(this, target, 'otherLender');
      assertError(await patch(session, created.webhook_id, { enabled: false, url: placeholderUrl('stolen') }, 'otherLender'), 404, 'not_found');
      assert.deepEqual(await shown(session, created.webhook_id), before);
    });

    it('a deleted endpoint: 404 not_found [op:updateWebhook 404 not_found]', async () => {
      const created = await session.register(placeholderUrl('patch-deleted'), ['tape.updated']);
      assert.equal((await session.remove(created.webhook_id)).status, 204);
      assertError(await patch(session, created.webhook_id, { enabled: true }), 404, 'not_found');
    });
  });

  describe('happy: what a changed endpoint is sent (P29) [op:updateWebhook 200] [event:verification.completed]', () => {
    beforeEach(function () {
      requireWebhooks(this, target);
      requireSandbox(this, target);
    });

    /** The log entry of `verificationId`'s delivery to `endpoint` once `done` holds for it. */
    const logFor = async (endpoint: ReceiverEndpoint, verificationId: string, done: (d: Delivery) => boolean, timeoutMs: number, what: string) => {
      const log = await session.waitForLog(
        endpoint.webhook.webhook_id,
        (entries) => entries.some((d) => d.verification_id === verificationId && done(d)),
        timeoutMs,
        what,
      );
      return log.find((d) => d.verification_id === verificationId)!;
    };

    it('after a url change the next event goes to the new url, signed with the unchanged secret, and the log keeps the delivery to the old one', async () => {
      const endpoint = await session.registerReceiver('moved-from', ['verification.completed']);
      const first = await session.createVerification(synthetic);
      await logFor(endpoint, first.verification_id, (d) => d.status === 'succeeded', attemptWaitMs(target, 1), 'the first delivery');
      const newPath = session.receiver.newPath('moved-to');
      session.receiver.expectSignedWith(newPath, endpoint.secret);
      const moved = await patch(session, endpoint.webhook.webhook_id, { url: session.receiver.urlFor(newPath) });
      assert.equal(moved.status, 200, moved.text);
      const second = await session.createVerification(synthetic);
      await logFor(endpoint, second.verification_id, (d) => d.status === 'succeeded', attemptWaitMs(target, 1), 'the delivery after the move');
      const atNew = session.receiver.requestsTo(newPath);
      assert.equal(atNew.length, 1, 'one request at the new url');
      assert.ok(atNew[0]!.rawBody.toString().includes(second.verification_id));
      assert.ok(verifySignature(atNew[0]!.rawBody, String(atNew[0]!.headers['x-service-signature']), endpoint.secret), 'the secret did not change');
      assert.equal(session.receiver.requestsTo(endpoint.path).length, 1, 'nothing more at the old url');
      const log = await session.log(endpoint.webhook.webhook_id);
      assert.deepEqual(new Set(log.map((d) => d.verification_id)), new Set([first.verification_id, second.verification_id]), 'the log kept both');
    });

    it('after an events change an event no longer subscribed to is not delivered, while an endpoint beside it gets it', async () => {
      const endpoint = await session.registerReceiver('resubscribed', ['verification.completed']);
      const control = await session.registerReceiver('resubscribed-control', ['verification.completed']);
      assert.equal((await patch(session, endpoint.webhook.webhook_id, { events: ['tape.updated'] })).status, 200);
      const verification = await session.createVerification(synthetic);
      await logFor(control, verification.verification_id, (d) => d.status === 'succeeded', attemptWaitMs(target, 1), 'the control delivery');
      assert.deepEqual(session.receiver.requestsTo(endpoint.path), []);
      assert.deepEqual(await session.log(endpoint.webhook.webhook_id), []);
    });

    it('a disabled endpoint gets nothing for an event meanwhile and logs no delivery for it, ever; enabled again, it gets the next event', async () => {
      const endpoint = await session.registerReceiver('disabled', ['verification.completed']);
      const control = await session.registerReceiver('disabled-control', ['verification.completed']);
      const disabled = await patch(session, endpoint.webhook.webhook_id, { enabled: false });
      assert.equal((disabled.json as Webhook).enabled, false, disabled.text);
      const meanwhile = await session.createVerification(synthetic);
      await logFor(control, meanwhile.verification_id, (d) => d.status === 'succeeded', attemptWaitMs(target, 1), 'the control delivery');
      assert.deepEqual(session.receiver.requestsTo(endpoint.path), [], 'the disabled endpoint received the event');
      assert.deepEqual(await session.log(endpoint.webhook.webhook_id), [], 'no delivery is logged for an event while disabled');

      assert.equal(((await patch(session, endpoint.webhook.webhook_id, { enabled: true })).json as Webhook).enabled, true);
      const after = await session.createVerification(synthetic);
      await logFor(endpoint, after.verification_id, (d) => d.status === 'succeeded', attemptWaitMs(target, 1), 'the delivery after enabling');
      await logFor(control, after.verification_id, (d) => d.status === 'succeeded', attemptWaitMs(target, 1), 'the control delivery after enabling');
      const requests = session.receiver.requestsTo(endpoint.path);
      assert.equal(requests.length, 1, 'only the event after enabling');
      assert.ok(requests[0]!.rawBody.toString().includes(after.verification_id));
      assert.deepEqual(
        (await session.log(endpoint.webhook.webhook_id)).map((d) => d.verification_id),
        [after.verification_id],
        'the event recorded while disabled was not delivered on enabling',
      );
    });

    it('a delivery pending when its endpoint is disabled is held, unattempted and unscheduled, past its retry time; enabling sends it [delivery:retry]', async function () {
      requireRetriesWithin(this, target, 2);
      const schedule = target.webhooks.retryScheduleSeconds;
      this.timeout(attemptWaitMs(target, 2) * 2 + 30_000);
      const endpoint = await session.registerReceiver('held', ['verification.completed']);
      // The first attempt is answered late, so the endpoint is disabled while it is under way.
      session.receiver.script(endpoint.path, { status: 500, delayMs: Math.min(1_500, target.webhooks.timeoutMs / 2) });
      const verification = await session.createVerification(synthetic);
      await session.receiver.waitForCount(endpoint.path, 1, attemptWaitMs(target, 1));
      assert.equal((await patch(session, endpoint.webhook.webhook_id, { enabled: false })).status, 200);
      const held = await logFor(endpoint, verification.verification_id, (d) => d.attempts.length === 1, attemptWaitMs(target, 1), 'the first attempt logged');
      assert.deepEqual([held.status, held.next_attempt_at], ['pending', null], 'held: pending, no attempt scheduled');
      // Past the second attempt's time: it must not come.
      await new Promise((resolve) => setTimeout(resolve, ((schedule[1] ?? 0) + 2) * 1000 + target.webhooks.timeoutMs));
      assert.equal(session.receiver.requestsTo(endpoint.path).length, 1, 'a disabled endpoint was sent a retry');
      const still = (await session.log(endpoint.webhook.webhook_id)).find((d) => d.delivery_id === held.delivery_id)!;
      assert.deepEqual([still.status, still.attempts.length, still.next_attempt_at], ['pending', 1, null]);

      assert.equal((await patch(session, endpoint.webhook.webhook_id, { enabled: true })).status, 200);
      const sent = await logFor(endpoint, verification.verification_id, finished, attemptWaitMs(target, 1), 'the held delivery sent on enabling');
      assert.deepEqual([sent.delivery_id, sent.status, sent.attempts.length], [held.delivery_id, 'succeeded', 2]);
      const requests = session.receiver.requestsTo(endpoint.path);
      assert.equal(requests.length, 2);
      assert.equal(requests[1]!.headers['x-service-delivery'], held.delivery_id, 'the same delivery, retried');
    });
  });
});

forEachPrivateTargetsRefusedTarget((target: Target) => {
  describe('security: a new url is refused where registration refuses it (D16, WEBHOOK_ALLOW_PRIVATE_TARGETS off) [op:updateWebhook 400 validation_error] [delivery:private targets refused]', () => {
    it('an endpoint cannot be moved to a loopback, private or metadata target; it keeps its url', async () => {
      const created = await target.api.post(WEBHOOKS_PATH, { json: { url: placeholderUrl('patch-private'), events: ['tape.updated'] } });
      assert.equal(created.status, 201, created.text);
      const webhook = created.json as Webhook;
      const path = `${WEBHOOKS_PATH}/${webhook.webhook_id}`;
      try {
        for (const url of ['https://127.0.0.1/', 'https://localhost/hook', 'https://10.0.0.1/', 'https://[::1]/', 'https://169.254.169.254/']) {
          assertUrlRefused(await target.api.request('PATCH', path, { json: { url } }), url);
        }
        assert.equal(((await target.api.get(path)).json as Webhook).url, webhook.url);
      } finally {
        await target.api.request('DELETE', path);
      }
    });
  });
});
