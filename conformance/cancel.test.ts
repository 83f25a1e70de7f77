import assert from 'node:assert/strict';
import { assertError } from './assertions.ts';
import { assertEventRequest, transitionRows } from './event-contract.ts';
import { forEachTarget, requireKey, requireSandbox } from './harness.ts';
import { cancelVerification, created, getVerification, randomReference, sleep, type Verification } from './sandbox.ts';
import { attemptWaitMs, requireWebhooks, WebhookSession } from './webhooks.ts';

/**
 * POST /api/v1/verifications/{id}/cancel: pending_consent → cancelled (a final state, row
 * `cancelled_by_lender` of x-transitions), a repeated cancel answered again, 422 in other states,
 * tenant isolation, the consent link saying the request was withdrawn, and the event.
 */

forEachTarget((target) => {
  const realCreator = () => ({ obligor_reference: randomReference('conformance-cancel-'), creator_platforms: ['youtube' as const] });

  describe('happy: cancel a verification waiting for consent [op:cancelVerification 200] [transition:pending_consent->cancelled]', () => {
    it('200 with the verification now cancelled; the status endpoint agrees and it stays cancelled', async () => {
      const verification = await created(target, realCreator());
      const response = await cancelVerification(target, verification.verification_id);
      assert.equal(response.status, 200, response.text);
      const cancelled = response.json as Verification;
      assert.equal(cancelled.status, 'cancelled');
      assert.equal(cancelled.completed_at, null);
      assert.equal(cancelled.failure_reason, null);
      assert.ok(Date.parse(cancelled.updated_at) >= Date.parse(verification.updated_at));
      assert.deepEqual(await getVerification(target, verification.verification_id), cancelled);
      await sleep(target.sandboxDelayMs);
      assert.deepEqual(await getVerification(target, verification.verification_id), cancelled);
    });

    it('cancelling again answers the same cancelled verification (safe to retry)', async () => {
      const verification = await created(target, realCreator());
      const first = await cancelVerification(target, verification.verification_id);
      const second = await cancelVerification(target, verification.verification_id);
      assert.equal(second.status, 200, second.text);
      assert.deepEqual(second.json, first.json);
    });

    it('the consent link then says the lender withdrew the request, with nothing to connect', async () => {
      const verification = await created(target, realCreator());
      await cancelVerification(target, verification.verification_id);
      const page = await fetch(verification.consent_url, { redirect: 'manual' });
      const html = await page.text();
      assert.equal(page.status, 410, html);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(html, /withdr[ae]w/i);
      assert.doesNotMatch(html, /<form|<button/i, 'no connect buttons');
    });
  });

  describe('errors: cancel', () => {
    it('a completed verification: 422 unprocessable naming its state [op:cancelVerification 422 unprocessable]', async function () {
      requireSandbox(this, target);
      const verification = await created(target, { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] });
      assertError(await cancelVerification(target, verification.verification_id), 422, 'unprocessable', /completed/);
      assert.equal((await getVerification(target, verification.verification_id)).status, 'completed');
    });

    it("another lender's verification: 404 not_found, and it stays pending_consent [op:cancelVerification 404 not_found]", async function () {
      requireKey(this, target, 'otherLender');
      const verification = await created(target, realCreator());
      assertError(await cancelVerification(target, verification.verification_id, 'otherLender'), 404, 'not_found');
      assert.equal((await getVerification(target, verification.verification_id)).status, 'pending_consent');
    });

    it('an id never issued: 404 not_found; no key: 401; a gdpr_admin key: 403 [op:cancelVerification 404 not_found] [op:cancelVerification 401 unauthorized] [op:cancelVerification 403 forbidden]', async function () {
      assertError(await cancelVerification(target, 'vrf_neverissued0000000000'), 404, 'not_found');
      assertError(await target.api.post('/api/v1/verifications/vrf_neverissued0000000000/cancel', { key: null }), 401, 'unauthorized');
      requireKey(this, target, 'gdpr');
      assertError(await cancelVerification(target, 'vrf_neverissued0000000000', 'gdpr'), 403, 'forbidden');
    });
  });

  describe('happy: the verification.cancelled event [event:verification.cancelled]', function () {
    let session: WebhookSession | undefined;
    after(async function () {
      this.timeout(30_000);
      await session?.cleanup();
    });

    it('an endpoint subscribed to verification.cancelled receives it once, signed and valid against its schema', async function () {
      requireWebhooks(this, target);
      this.timeout(attemptWaitMs(target, 1) + 30_000);
      session = await WebhookSession.open(target);
      const endpoint = await session.registerReceiver('cancelled', ['verification.cancelled']);
      const verification = await session.createVerification(randomReference('conformance-cancel-event-'));
      const response = await session.request('POST', `/api/v1/verifications/${verification.verification_id}/cancel`);
      assert.equal(response.status, 200, response.text);
      const log = await session.waitForLog(
        endpoint.webhook.webhook_id,
        (entries) => entries.some((d) => d.verification_id === verification.verification_id && d.status === 'succeeded'),
        attemptWaitMs(target, 1),
        'the cancellation delivered',
      );
      assert.deepEqual(
        log.filter((d) => d.verification_id === verification.verification_id).map((d) => d.event),
        ['verification.cancelled'],
      );
      const rows = await transitionRows();
      const events = session.receiver
        .requestsTo(endpoint.path)
        .map((request) => assertEventRequest(request, endpoint, rows))
        .filter((event) => event.payload.verification_id === verification.verification_id);
      assert.equal(events.length, 1);
      assert.equal(events[0]!.payload.event, 'verification.cancelled');
      assert.equal((events[0]!.payload as { occurred_at?: string }).occurred_at, (response.json as Verification).updated_at);
    });
  });
});
