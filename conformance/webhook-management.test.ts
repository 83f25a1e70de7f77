import assert from 'node:assert/strict';
import { assertError } from './assertions.ts';
import { assertEventRequest, transitionRows } from './event-contract.ts';
import { forEachTarget, requireKey, requireSandbox } from './harness.ts';
import { randomReference, sleep } from './sandbox.ts';
import { verifySignature, type ReceivedRequest } from './webhook-receiver.ts';
import { attemptWaitMs, placeholderUrl, requireWebhooks, WEBHOOKS_PATH, WebhookSession, type ReceiverEndpoint } from './webhooks.ts';

/**
 * Webhook endpoint management (P25): GET /webhooks/{id}, pages of GET /webhooks, secret rotation
 * with its overlap (both signatures in one header, either verifies), and POST /webhooks/{id}/test.
 */

type Webhook = { webhook_id: string; url: string; events: string[]; enabled: boolean; created_at: string; previous_secret_expires_at: string | null };
type Rotated = Webhook & { secret: string };

/** Section 5.7 / P25: the overlap a rotation without `overlap_seconds` gives the old secret. */
const DEFAULT_OVERLAP_SECONDS = 86_400;
/**
 * Tolerance of the overlap bounds. They are read on the service's own clock (the end it reports
 * against the `created_at` of an endpoint registered just before), and the suite's clock only
 * measures how long its two requests took, so clock skew does not enter; what is left is the
 * millisecond rounding of the timestamps.
 */
const OVERLAP_TOLERANCE_MS = 100;

forEachTarget((target) => {
  describe('happy and errors: webhook endpoint management', function () {
    let session: WebhookSession;
    before(async () => {
      session = await WebhookSession.open(target);
    });
    afterEach(async function () {
      this.timeout(30_000);
      await session.cleanup();
    });

    it('GET /webhooks/{id}: the endpoint as listed, no secret; another lender: 404 [op:getWebhook 200] [op:getWebhook 404 not_found]', async function () {
      const created = await session.register(placeholderUrl('get'), ['tape.updated']);
      const response = await session.request('GET', `${WEBHOOKS_PATH}/${created.webhook_id}`);
      assert.equal(response.status, 200, response.text);
      const webhook = response.json as Webhook;
      assert.deepEqual(webhook, {
        webhook_id: created.webhook_id,
        url: created.url,
        events: created.events,
        enabled: true,
        created_at: created.created_at,
        previous_secret_expires_at: null,
      });
      assert.ok(!response.text.includes(created.secret));
      requireKey(this, target, 'otherLender');
      assertError(await session.request('GET', `${WEBHOOKS_PATH}/${created.webhook_id}`, { as: 'otherLender' }), 404, 'not_found');
    });

    it('GET /webhooks pages with limit and starting_after, oldest first, has_more; a cursor not of the lender: 400 validation_error [op:listWebhooks 200] [op:listWebhooks 400 validation_error]', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i += 1) ids.push((await session.register(placeholderUrl(`page-${i}`), ['tape.updated'])).webhook_id);
      const seen: string[] = [];
      let after = '';
      for (let page = 0; page < 30; page += 1) {
        const response = await session.request('GET', `${WEBHOOKS_PATH}?limit=1${after ? `&starting_after=${after}` : ''}`);
        assert.equal(response.status, 200, response.text);
        const body = response.json as { data: Webhook[]; has_more: boolean };
        assert.ok(body.data.length === 1, `a page of limit=1 holds one endpoint, not ${body.data.length}`);
        seen.push(...body.data.map((w) => w.webhook_id));
        if (!body.has_more) break;
        after = body.data.at(-1)!.webhook_id;
      }
      assert.deepEqual(
        seen.filter((id) => ids.includes(id)),
        ids,
      );
      assertError(await session.request('GET', `${WEBHOOKS_PATH}?starting_after=whk_neverissued00000000`), 400, 'validation_error', /starting_after/);
    });

    it('rotate-secret: 200 with a new whsec_ secret and the end of the overlap; bad overlap_seconds: 400; unknown endpoint: 404 [op:rotateWebhookSecret 200] [op:rotateWebhookSecret 400 validation_error] [op:rotateWebhookSecret 404 not_found]', async () => {
      const created = await session.register(placeholderUrl('rotate'), ['tape.updated']);
      const started = Date.now();
      const response = await session.request('POST', `${WEBHOOKS_PATH}/${created.webhook_id}/rotate-secret`, { json: { overlap_seconds: 600 } });
      assert.equal(response.status, 200, response.text);
      const rotated = response.json as Webhook & { secret: string };
      assert.notEqual(rotated.secret, created.secret);
      const end = Date.parse(rotated.previous_secret_expires_at!);
      assert.ok(Math.abs(end - (started + 600_000)) < 5 * 60_000, `previous_secret_expires_at ${rotated.previous_secret_expires_at} is about 600 s away`);
      assert.equal(
        ((await session.request('GET', `${WEBHOOKS_PATH}/${created.webhook_id}`)).json as Webhook).previous_secret_expires_at,
        rotated.previous_secret_expires_at,
      );
      const none = await session.request('POST', `${WEBHOOKS_PATH}/${created.webhook_id}/rotate-secret`, { json: { overlap_seconds: 0 } });
      assert.equal((none.json as Webhook).previous_secret_expires_at, null);
      for (const body of [{ overlap_seconds: 604801 }, { overlap_seconds: 'soon' }, { grace: 1 }]) {
        assertError(await session.request('POST', `${WEBHOOKS_PATH}/${created.webhook_id}/rotate-secret`, { json: body }), 400, 'validation_error');
      }
      assertError(await session.request('POST', `${WEBHOOKS_PATH}/whk_neverissued00000000/rotate-secret`), 404, 'not_found');
    });

    it('during the overlap a delivery carries both signatures, new first, and each secret verifies it [op:rotateWebhookSecret 200] [header:X-Service-Signature]', async function () {
      requireWebhooks(this, target);
      requireSandbox(this, target);
      this.timeout(target.sandboxDelayMs + attemptWaitMs(target, 1) + 30_000);
      const endpoint = await session.registerReceiver('rotation', ['verification.expired']);
      const rotated = (await session.request('POST', `${WEBHOOKS_PATH}/${endpoint.webhook.webhook_id}/rotate-secret`, { json: { overlap_seconds: 3600 } }))
        .json as { secret: string };
      session.receiver.expectSignedWith(endpoint.path, rotated.secret);
      const verification = await session.createVerification(randomReference('test-expire-'));
      await session.waitForLog(
        endpoint.webhook.webhook_id,
        (log) => log.some((d) => d.verification_id === verification.verification_id && d.status === 'succeeded'),
        target.sandboxDelayMs + attemptWaitMs(target, 1),
        'the expiry delivered',
      );
      const request = session.receiver.requestsTo(endpoint.path).find((r) => r.rawBody.toString().includes(verification.verification_id))!;
      const header = request.headers['x-service-signature'] as string;
      assert.match(header, /^sha256=[0-9a-f]{64}, ?sha256=[0-9a-f]{64}$/, 'two signatures');
      const [first, second] = header.split(',').map((entry) => entry.trim());
      assert.ok(verifySignature(request.rawBody, first, rotated.secret), 'the new secret signs first');
      assert.ok(verifySignature(request.rawBody, second, endpoint.secret), 'then the old one');
      assert.ok(verifySignature(request.rawBody, header, endpoint.secret) && verifySignature(request.rawBody, header, rotated.secret));
      assert.equal(request.signature, 'valid', "the receiver's own check with the new secret");
    });

    /** Registers an endpoint at the receiver and rotates it at once: the overlap end is read against its created_at. */
    async function registerAndRotate(label: string, body: { overlap_seconds: number } | undefined) {
      const started = Date.now();
      const endpoint = await session.registerReceiver(label, ['verification.completed']);
      const response = await session.request('POST', `${WEBHOOKS_PATH}/${endpoint.webhook.webhook_id}/rotate-secret`, body ? { json: body } : {});
      const elapsedMs = Date.now() - started;
      assert.equal(response.status, 200, response.text);
      const rotated = response.json as Rotated;
      session.receiver.expectSignedWith(endpoint.path, rotated.secret);
      return { endpoint, rotated, elapsedMs };
    }

    /** The overlap ends `seconds` after the rotation: not before, and not later than the requests took, on the service's clock. */
    function assertOverlapEnd(rotated: Rotated, seconds: number, elapsedMs: number): void {
      assert.ok(rotated.previous_secret_expires_at, 'an overlap end');
      const end = Date.parse(rotated.previous_secret_expires_at) - Date.parse(rotated.created_at);
      assert.ok(end >= seconds * 1000 - OVERLAP_TOLERANCE_MS, `the overlap ends ${end} ms after registration, before ${seconds} s`);
      assert.ok(
        end <= seconds * 1000 + elapsedMs + OVERLAP_TOLERANCE_MS,
        `the overlap ends ${end} ms after registration, more than ${seconds} s + ${elapsedMs} ms`,
      );
    }

    /** POST /webhooks/{id}/test and the request it delivered. */
    async function delivered(endpoint: ReceiverEndpoint): Promise<ReceivedRequest> {
      const before = session.receiver.requestsTo(endpoint.path).length;
      const response = await session.request('POST', `${WEBHOOKS_PATH}/${endpoint.webhook.webhook_id}/test`);
      assert.equal(response.status, 200, response.text);
      const requests = session.receiver.requestsTo(endpoint.path);
      assert.equal(requests.length, before + 1, 'one test delivery');
      return requests.at(-1)!;
    }

    const signaturesIn = (request: ReceivedRequest) =>
      String(request.headers['x-service-signature'])
        .split(',')
        .map((entry) => entry.trim());
    /** Which of `secrets` verify each listed signature, in the header's order. */
    const signersOf = (request: ReceivedRequest, secrets: Record<string, string>) =>
      signaturesIn(request).map(
        (signature) =>
          Object.keys(secrets)
            .filter((name) => verifySignature(request.rawBody, signature, secrets[name]!))
            .join('|') || 'none',
      );

    it('rotate-secret without a body: the old secret overlaps the default day (86400 s, upper and lower bound), both sign, new first [op:rotateWebhookSecret 200] [header:X-Service-Signature]', async function () {
      requireWebhooks(this, target);
      const { endpoint, rotated, elapsedMs } = await registerAndRotate('rotate-default', undefined);
      assertOverlapEnd(rotated, DEFAULT_OVERLAP_SECONDS, elapsedMs);
      const request = await delivered(endpoint);
      assert.deepEqual(signersOf(request, { new: rotated.secret, old: endpoint.secret }), ['new', 'old']);
      assert.equal(request.signature, 'valid');
    });

    it('rotate-secret with a body: overlap_seconds is the overlap; during it both secrets sign, after it only the new one, and the end is no longer shown [op:rotateWebhookSecret 200] [header:X-Service-Signature]', async function () {
      requireWebhooks(this, target);
      const overlap = 2;
      this.timeout(overlap * 1000 + 30_000);
      const { endpoint, rotated, elapsedMs } = await registerAndRotate('rotate-short', { overlap_seconds: overlap });
      const rotatedAt = Date.now();
      assertOverlapEnd(rotated, overlap, elapsedMs);
      const during = await delivered(endpoint);
      assert.ok(Date.now() - rotatedAt < overlap * 1000, 'the first test was sent inside the overlap');
      assert.deepEqual(signersOf(during, { new: rotated.secret, old: endpoint.secret }), ['new', 'old'], 'during the overlap');
      const shown = (await session.request('GET', `${WEBHOOKS_PATH}/${endpoint.webhook.webhook_id}`)).json as Webhook;
      assert.equal(shown.previous_secret_expires_at, rotated.previous_secret_expires_at);
      // Past the end on the service's clock too: the wait is measured from after the rotation's answer.
      await sleep(overlap * 1000 + 1_000 - (Date.now() - rotatedAt));
      const after = await delivered(endpoint);
      assert.deepEqual(signersOf(after, { new: rotated.secret, old: endpoint.secret }), ['new'], 'after the overlap only the new secret signs');
      assert.ok(!verifySignature(after.rawBody, String(after.headers['x-service-signature']), endpoint.secret), 'the old secret no longer verifies');
      assert.equal(((await session.request('GET', `${WEBHOOKS_PATH}/${endpoint.webhook.webhook_id}`)).json as Webhook).previous_secret_expires_at, null);
    });

    it('rotate-secret twice in a row: the second retires the first secret at once; the two newest sign, newest first; overlap 0 then leaves one [op:rotateWebhookSecret 200] [header:X-Service-Signature]', async function () {
      requireWebhooks(this, target);
      const { endpoint, rotated: first } = await registerAndRotate('rotate-twice', { overlap_seconds: 3600 });
      const secondResponse = await session.request('POST', `${WEBHOOKS_PATH}/${endpoint.webhook.webhook_id}/rotate-secret`, {
        json: { overlap_seconds: 3600 },
      });
      assert.equal(secondResponse.status, 200, secondResponse.text);
      const second = secondResponse.json as Rotated;
      session.receiver.expectSignedWith(endpoint.path, second.secret);
      assert.equal(new Set([endpoint.secret, first.secret, second.secret]).size, 3, 'three different secrets');
      assert.ok(
        Date.parse(second.previous_secret_expires_at!) >= Date.parse(first.previous_secret_expires_at!),
        'the new overlap runs from the second rotation',
      );
      const secrets = { original: endpoint.secret, first: first.secret, second: second.secret };
      assert.deepEqual(signersOf(await delivered(endpoint), secrets), ['second', 'first'], 'at most two secrets: the original is retired');
      const third = (await session.request('POST', `${WEBHOOKS_PATH}/${endpoint.webhook.webhook_id}/rotate-secret`, { json: { overlap_seconds: 0 } }))
        .json as Rotated;
      session.receiver.expectSignedWith(endpoint.path, third.secret);
      assert.equal(third.previous_secret_expires_at, null);
      assert.deepEqual(signersOf(await delivered(endpoint), { ...secrets, third: third.secret }), ['third'], 'overlap 0 ends the overlap at once');
    });

    it('test: 200 with the receiver answer; a signed webhook.test valid against its schema arrives, whatever the subscription [op:sendWebhookTest 200] [event:webhook.test]', async function () {
      requireWebhooks(this, target);
      const endpoint = await session.registerReceiver('test-event', ['verification.completed']);
      const response = await session.request('POST', `${WEBHOOKS_PATH}/${endpoint.webhook.webhook_id}/test`);
      assert.equal(response.status, 200, response.text);
      const result = response.json as { event_id: string; delivery_id: string; succeeded: boolean; status_code: number | null };
      assert.equal(result.succeeded, true, response.text);
      assert.equal(result.status_code, 200);
      const requests = session.receiver.requestsTo(endpoint.path);
      assert.equal(requests.length, 1);
      const event = assertEventRequest(requests[0]!, { ...endpoint, events: [...endpoint.events, 'webhook.test'] }, await transitionRows());
      assert.equal(event.payload.event, 'webhook.test');
      assert.equal(event.deliveryId, result.delivery_id);
      assert.equal((event.payload as { event_id?: string }).event_id, result.event_id);
      const log = (await session.deliveries(endpoint.webhook.webhook_id)).json as { data: unknown[] };
      assert.deepEqual(log.data, [], 'a test is not part of the delivery log');
    });

    it('test to a receiver answering 500: 200 with succeeded false and status_code 500; unknown endpoint: 404 [op:sendWebhookTest 200] [op:sendWebhookTest 404 not_found]', async function () {
      requireWebhooks(this, target);
      const endpoint = await session.registerReceiver('test-failing', ['verification.completed']);
      session.receiver.answerAlways(endpoint.path, 500);
      const response = await session.request('POST', `${WEBHOOKS_PATH}/${endpoint.webhook.webhook_id}/test`);
      assert.equal(response.status, 200, response.text);
      assert.deepEqual([(response.json as { succeeded: boolean }).succeeded, (response.json as { status_code: number }).status_code], [false, 500]);
      assertError(await session.request('POST', `${WEBHOOKS_PATH}/whk_neverissued00000000/test`), 404, 'not_found');
    });
  });
});
