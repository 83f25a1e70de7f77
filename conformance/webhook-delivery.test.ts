import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { request, type RequestOptions } from 'node:https';
import { forEachTarget, requireKey, requireSandbox } from './harness.ts';
import { assertEventRequest, transitionRows, UUID } from './event-contract.ts';
import { sleep, SYNTHETIC_CREATORS } from './sandbox.ts';
import { makeTestCa, readCaDir, WebhookReceiver, type ReceivedRequest } from './webhook-receiver.ts';
import {
  attemptWaitMs,
  finished,
  requireRetriesWithin,
  requireWebhooks,
  WEBHOOKS_PATH,
  WebhookSession,
  type Delivery,
  type DeliveryList,
  type ReceiverEndpoint,
} from './webhooks.ts';
import { assertError } from './assertions.ts';
import { skipBecause } from './skip.ts';

/**
 * Delivery (6.2, D14, P15): a non-2xx answer or no answer within WEBHOOK_TIMEOUT_MS is retried at
 * the WEBHOOK_RETRY_SCHEDULE offsets with the same X-Service-Delivery and the same bytes; after the
 * last attempt the delivery is `failed`; a finished delivery can be replayed as a new delivery of the
 * same event, one still being attempted cannot. Each test registers its own endpoint and makes a
 * synthetic creator, which completes at creation and so emits `verification.completed` at once.
 */

/** Scheduled times are kept to the millisecond; the sender polls, so an attempt is never early, only late. */
const EARLY_TOLERANCE_MS = 50;
/**
 * How late an attempt may come after its offset: the sender polls for due deliveries (every 500 ms
 * in this service) and a loaded machine adds some; a schedule read wrong is off by whole seconds.
 */
const LATE_TOLERANCE_MS = 1_500;

/** What Node and OpenSSL call a certificate that does not verify or does not name the host; loose on purpose. */
const TLS_ERROR = /cert|tls|ssl|altname|verify|self[- ]signed/i;

/** POSTs `{}` to `url` from the suite itself: the controls showing a receiver is up. */
const reach = (url: string, tls: RequestOptions) =>
  new Promise<number>((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, ...tls }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end('{}');
  });

const header = (request: ReceivedRequest, name: string) => {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

forEachTarget((target) => {
  let session: WebhookSession;
  const synthetic = SYNTHETIC_CREATORS[1].reference;

  beforeEach(async function () {
    this.timeout(30_000);
    requireWebhooks(this, target);
    requireSandbox(this, target);
    session = await WebhookSession.open(target);
  });
  afterEach(async function () {
    this.timeout(30_000);
    await session?.cleanup();
  });

  /** An endpoint for verification.completed at a fresh path, and one event for it (the log entry once it exists). */
  async function oneEvent(label: string): Promise<{ endpoint: ReceiverEndpoint; verificationId: string }> {
    const endpoint = await session.registerReceiver(label, ['verification.completed']);
    const verification = await session.createVerification(synthetic);
    assert.equal(verification.status, 'completed', 'a synthetic creator completes at creation');
    return { endpoint, verificationId: verification.verification_id };
  }

  const deliveryOf = (log: Delivery[], verificationId: string) => log.find((d) => d.verification_id === verificationId);
  const logFor = async (endpoint: ReceiverEndpoint, verificationId: string, done: (d: Delivery) => boolean, timeoutMs: number, what: string) => {
    const log = await session.waitForLog(
      endpoint.webhook.webhook_id,
      (entries) => entries.some((d) => d.verification_id === verificationId && done(d)),
      timeoutMs,
      what,
    );
    return { log, delivery: deliveryOf(log, verificationId)! };
  };
  /** Attempt times relative to the first, against the schedule's offsets. */
  const assertOnSchedule = (delivery: Delivery) => {
    const first = Date.parse(delivery.attempts[0]!.attempted_at);
    delivery.attempts.forEach((attempt, index) => {
      const offsetMs = target.webhooks.retryScheduleSeconds[index]! * 1000;
      const actual = Date.parse(attempt.attempted_at) - first;
      assert.ok(actual >= offsetMs - EARLY_TOLERANCE_MS, `attempt ${attempt.attempt} came ${actual} ms after the first; the schedule says ${offsetMs} ms`);
      assert.ok(
        actual <= offsetMs + LATE_TOLERANCE_MS,
        `attempt ${attempt.attempt} came ${actual} ms after the first; the schedule says ${offsetMs} ms (+${LATE_TOLERANCE_MS})`,
      );
    });
  };

  describe('happy: a delivery answered with a 500 is retried (6.2, D14) [delivery:retry] [op:listWebhookDeliveries 200] [header:X-Service-Delivery]', () => {
    it('500 then 200: two requests with the same X-Service-Delivery and the same bytes; the log shows [500, 200], succeeded', async function () {
      requireRetriesWithin(this, target, 2);
      const rows = await transitionRows();
      const endpoint = await session.registerReceiver('retry', ['verification.completed']);
      const { path } = endpoint;
      session.receiver.script(path, 500, 200);
      const verification = await session.createVerification(synthetic);

      const requests = await session.receiver.waitForCount(path, 2, attemptWaitMs(target, 2));
      const [first, second] = requests.map((request) => assertEventRequest(request, endpoint, rows));
      assert.equal(first!.payload.verification_id, verification.verification_id);
      assert.equal(second!.deliveryId, first!.deliveryId, 'X-Service-Delivery is the same across retries');
      assert.ok(second!.request.rawBody.equals(first!.request.rawBody), 'the retry sends the same bytes');
      assert.equal(header(second!.request, 'x-service-signature'), header(first!.request, 'x-service-signature'));
      assert.deepEqual(
        requests.map((r) => r.answeredStatus),
        [500, 200],
      );

      const { delivery } = await logFor(endpoint, verification.verification_id, finished, attemptWaitMs(target, 2), 'the delivery finished');
      assert.equal(delivery.delivery_id, first!.deliveryId, 'delivery_id is the X-Service-Delivery');
      assert.equal(delivery.event_id, first!.payload.event_id);
      assert.equal(delivery.status, 'succeeded');
      assert.deepEqual(
        delivery.attempts.map((a) => a.status_code),
        [500, 200],
      );
      assert.deepEqual(
        delivery.attempts.map((a) => a.attempt),
        [1, 2],
      );
      assert.deepEqual(
        delivery.attempts.map((a) => a.error),
        [null, null],
        'an answered attempt has no error',
      );
      assert.equal(delivery.next_attempt_at, null);
      assertOnSchedule(delivery);
      assert.equal(session.receiver.requestsTo(path).length, 2, 'nothing is sent after the 200');
    });

    it('a 3xx is not followed and counts as a failed attempt (P14)', async function () {
      requireRetriesWithin(this, target, 2);
      const endpoint = await session.registerReceiver('redirect', ['verification.completed']);
      const trap = session.receiver.newPath('redirect-target');
      session.receiver.script(endpoint.path, { status: 307, headers: { location: session.receiver.urlFor(trap) } }, 200);
      const verification = await session.createVerification(synthetic);
      await session.receiver.waitForCount(endpoint.path, 2, attemptWaitMs(target, 2));
      const { delivery } = await logFor(endpoint, verification.verification_id, finished, attemptWaitMs(target, 2), 'the delivery finished');
      assert.deepEqual(
        delivery.attempts.map((a) => a.status_code),
        [307, 200],
      );
      assert.equal(delivery.status, 'succeeded');
      assert.deepEqual(session.receiver.requestsTo(trap), [], 'the Location was followed');
    });

    it('any 2xx acknowledges: a 204 or 202 is not retried', async function () {
      const noContent = await session.registerReceiver('no-content', ['verification.completed']);
      session.receiver.answerAlways(noContent.path, 204);
      const accepted = await session.registerReceiver('accepted', ['verification.completed']);
      session.receiver.answerAlways(accepted.path, 202);
      const verification = await session.createVerification(synthetic);
      for (const [endpoint, status] of [
        [noContent, 204],
        [accepted, 202],
      ] as const) {
        const { delivery } = await logFor(endpoint, verification.verification_id, finished, attemptWaitMs(target, 1), 'the delivery finished');
        assert.equal(delivery.status, 'succeeded', `a ${status}`);
        assert.deepEqual(
          delivery.attempts.map((a) => a.status_code),
          [status],
        );
      }
    });
  });

  describe('happy: the delivery log filtered by state and time, and paged backwards [op:listWebhookDeliveries 200]', () => {
    it('status=a,b, created_gte and created_lt select deliveries; ending_before walks back to the newest', async function () {
      const endpoint = await session.registerReceiver('log-filters', ['verification.completed']);
      const made: string[] = [];
      for (let i = 0; i < 3; i++) {
        made.push((await session.createVerification(synthetic)).verification_id);
        await sleep(5);
      }
      const log = await session.waitForLog(
        endpoint.webhook.webhook_id,
        (entries) => entries.length === 3 && entries.every((d) => d.status === 'succeeded'),
        attemptWaitMs(target, 1),
        'three delivered events',
      );
      const ids = log.map((d) => d.delivery_id);
      const page = async (query: string) => {
        const response = await session.request('GET', `${WEBHOOKS_PATH}/${endpoint.webhook.webhook_id}/deliveries?${query}`);
        assert.equal(response.status, 200, response.text);
        const body = response.json as DeliveryList;
        return [body.data.map((d) => d.delivery_id), body.has_more];
      };
      assert.deepEqual(await page('status=succeeded,failed'), [ids, false]);
      assert.deepEqual(await page('status=pending,failed'), [[], false]);
      assert.deepEqual(await page(`created_gte=${encodeURIComponent(log[1]!.created_at)}`), [ids.slice(0, 2), false]);
      assert.deepEqual(await page(`created_lt=${encodeURIComponent(log[1]!.created_at)}`), [ids.slice(2), false]);
      assert.deepEqual(await page(`limit=1&ending_before=${ids[2]}`), [[ids[1]], true]);
      assert.deepEqual(await page(`limit=5&ending_before=${ids[2]}`), [ids.slice(0, 2), false]);
      assertError(
        await session.request('GET', `${WEBHOOKS_PATH}/${endpoint.webhook.webhook_id}/deliveries?starting_after=${ids[0]}&ending_before=${ids[2]}`),
        400,
        'validation_error',
        /ending_before/,
      );
    });
  });

  describe('happy: a receiver slower than WEBHOOK_TIMEOUT_MS (6.2) [limit:webhook receiver timeout] [delivery:retry]', () => {
    it('the attempt is logged with status_code null and an error after about the timeout, and retried', async function () {
      const { timeoutMs } = target.webhooks;
      if (timeoutMs > 15_000) {
        skipBecause(
          this,
          `the deployment's receiver timeout is ${timeoutMs} ms; a deployment with a shorter WEBHOOK_TIMEOUT_MS, told with --webhook-timeout-ms (CONFORMANCE_WEBHOOK_TIMEOUT_MS), runs it`,
        );
      }
      const endpoint = await session.registerReceiver('slow', ['verification.completed']);
      const { path } = endpoint;
      session.receiver.script(path, { status: 200, delayMs: timeoutMs + 1_000 });
      const verification = await session.createVerification(synthetic);

      const { delivery: afterFirst } = await logFor(
        endpoint,
        verification.verification_id,
        (d) => d.attempts.length >= 1,
        attemptWaitMs(target, 1),
        'the first attempt',
      );
      const [attempt] = afterFirst.attempts;
      assert.equal(attempt!.status_code, null, 'no response arrived');
      assert.equal(typeof attempt!.error, 'string');
      assert.ok(attempt!.error!.length > 0, 'the error says why');
      assert.ok(attempt!.duration_ms >= timeoutMs - EARLY_TOLERANCE_MS, `gave up after ${attempt!.duration_ms} ms; the timeout is ${timeoutMs} ms`);
      assert.ok(attempt!.duration_ms < timeoutMs + 1_000, `waited ${attempt!.duration_ms} ms, longer than the receiver took to answer`);

      const schedule = target.webhooks.retryScheduleSeconds;
      if (schedule.length < 2 || schedule[1]! > 10) {
        assert.equal(afterFirst.status, 'pending', 'the attempt is retried');
        assert.ok(afterFirst.next_attempt_at, 'with the next attempt scheduled');
        return;
      }
      const { delivery } = await logFor(endpoint, verification.verification_id, finished, attemptWaitMs(target, 2), 'the retry');
      assert.equal(delivery.status, 'succeeded');
      assert.deepEqual(
        delivery.attempts.map((a) => a.status_code),
        [null, 200],
      );
      const requests = session.receiver.requestsTo(path);
      assert.equal(requests.length, 2);
      assert.equal(header(requests[1]!, 'x-service-delivery'), header(requests[0]!, 'x-service-delivery'), 'the same delivery');
    });
  });

  describe('happy: a delivery that never succeeds, and its replay (D14, P15) [delivery:failed and replayed] [op:replayWebhookDelivery 202] [op:replayWebhookDelivery 422 unprocessable]', () => {
    it('always 500: one attempt per schedule entry at its offset, then failed with next_attempt_at null', async function () {
      requireRetriesWithin(this, target, 'all');
      const schedule = target.webhooks.retryScheduleSeconds;
      const rows = await transitionRows();
      const endpoint = await session.registerReceiver('always-500', ['verification.completed']);
      const { path, webhook } = endpoint;
      session.receiver.answerAlways(path, 500);
      const verification = await session.createVerification(synthetic);

      const { delivery, log } = await logFor(endpoint, verification.verification_id, finished, attemptWaitMs(target, schedule.length), 'the delivery failed');
      assert.equal(delivery.status, 'failed');
      assert.equal(delivery.attempts.length, schedule.length, 'one attempt per schedule entry');
      assert.deepEqual(
        delivery.attempts.map((a) => a.status_code),
        schedule.map(() => 500),
      );
      assert.deepEqual(
        delivery.attempts.map((a) => a.attempt),
        schedule.map((_, i) => i + 1),
      );
      assert.equal(delivery.next_attempt_at, null, 'nothing more is scheduled');
      assertOnSchedule(delivery);
      const requests = session.receiver.requestsTo(path);
      assert.equal(requests.length, schedule.length, 'the receiver saw every attempt, and no more');
      const received = requests.map((request) => assertEventRequest(request, endpoint, rows));
      assert.ok(
        received.every((r) => r.deliveryId === delivery.delivery_id),
        'one X-Service-Delivery, the delivery_id, across the retries',
      );
      assert.ok(
        received.every((r) => r.request.rawBody.equals(received[0]!.request.rawBody)),
        'the same bytes every time',
      );

      // The replay: a new delivery of the same event (P15), which this time is acknowledged.
      session.receiver.answerAlways(path, 200);
      const replayed = await session.replay(webhook.webhook_id, delivery.delivery_id);
      assert.equal(replayed.status, 202, replayed.text);
      const replay = replayed.json as Delivery;
      assert.match(replay.delivery_id, UUID);
      assert.notEqual(replay.delivery_id, delivery.delivery_id, 'a new delivery id');
      assert.equal(replay.replay_of, delivery.delivery_id);
      assert.equal(replay.event_id, delivery.event_id, 'the same event');
      assert.equal(replay.event, delivery.event);
      assert.equal(replay.verification_id, delivery.verification_id);
      assert.equal(replay.webhook_id, webhook.webhook_id);
      assert.equal(replay.status, 'pending', 'queued, not yet attempted');
      assert.deepEqual(replay.attempts, []);

      const [arrived] = await session.receiver
        .waitFor(path, (all) => all.some((r) => header(r, 'x-service-delivery') === replay.delivery_id), attemptWaitMs(target, 1), 'the replay')
        .then((all) => all.filter((r) => header(r, 'x-service-delivery') === replay.delivery_id));
      const replayEvent = assertEventRequest(arrived!, endpoint, rows);
      assert.equal(replayEvent.payload.event_id, delivery.event_id, 'the body carries the original event_id');
      assert.ok(arrived!.rawBody.equals(received[0]!.request.rawBody), 'the replay sends the event as first sent');

      const after = await session.waitForLog(
        webhook.webhook_id,
        (entries) => entries.some((d) => d.delivery_id === replay.delivery_id && finished(d)),
        attemptWaitMs(target, 1),
        'the replay finished',
      );
      const loggedReplay = after.find((d) => d.delivery_id === replay.delivery_id)!;
      assert.equal(loggedReplay.status, 'succeeded');
      assert.equal(loggedReplay.replay_of, delivery.delivery_id);
      assert.deepEqual(
        loggedReplay.attempts.map((a) => a.status_code),
        [200],
      );
      const ids = after.map((d) => d.delivery_id);
      assert.ok(ids.indexOf(replay.delivery_id) < ids.indexOf(delivery.delivery_id), 'newest first: the replay before the original');
      assert.deepEqual(
        after.find((d) => d.delivery_id === delivery.delivery_id),
        log.find((d) => d.delivery_id === delivery.delivery_id),
        'the original is left as it was',
      );
    });

    it('a delivery still being attempted cannot be replayed: 422 unprocessable', async function () {
      // Needs a second attempt to be due, not to wait for it: any schedule of two or more entries will do.
      if (target.webhooks.retryScheduleSeconds.length < 2) {
        skipBecause(this, 'a schedule of one attempt leaves no delivery pending');
      }
      const endpoint = await session.registerReceiver('pending', ['verification.completed']);
      const { path, webhook } = endpoint;
      session.receiver.answerAlways(path, 500);
      const verification = await session.createVerification(synthetic);
      const [first] = await session.receiver.waitForCount(path, 1, attemptWaitMs(target, 1));
      const deliveryId = header(first!, 'x-service-delivery')!;
      assertError(await session.replay(webhook.webhook_id, deliveryId), 422, 'unprocessable');
      // Once its failed first attempt is in the log, and the next one still due, it is still being
      // attempted: refused again (not only a delivery never attempted).
      const { delivery: attempted } = await logFor(
        endpoint,
        verification.verification_id,
        (d) => d.attempts.length >= 1,
        attemptWaitMs(target, 1),
        'the first attempt logged',
      );
      if (attempted.status === 'pending') assertError(await session.replay(webhook.webhook_id, deliveryId), 422, 'unprocessable');
      const log = (await session.log(webhook.webhook_id)).filter((d) => d.verification_id === verification.verification_id);
      const delivery = log.find((d) => d.delivery_id === deliveryId);
      assert.ok(delivery, 'the delivery is in the log under its X-Service-Delivery');
      assert.equal(delivery.status, 'pending', 'still being attempted');
      assert.ok(
        delivery.next_attempt_at !== null && !Number.isNaN(Date.parse(delivery.next_attempt_at)),
        `a pending delivery has its next attempt time (${delivery.next_attempt_at})`,
      );
      assert.equal(log.length, 1, 'no replay was queued');
    });

    it('a delivered event can be replayed too: 202, and it arrives again under a new X-Service-Delivery with the same event_id', async function () {
      const rows = await transitionRows();
      const { endpoint, verificationId } = await oneEvent('replay-succeeded');
      const { delivery } = await logFor(endpoint, verificationId, finished, attemptWaitMs(target, 1), 'the delivery finished');
      assert.equal(delivery.status, 'succeeded');
      const replayed = await session.replay(endpoint.webhook.webhook_id, delivery.delivery_id);
      assert.equal(replayed.status, 202, replayed.text);
      const replay = replayed.json as Delivery;
      assert.equal(replay.replay_of, delivery.delivery_id);
      const requests = await session.receiver.waitForCount(endpoint.path, 2, attemptWaitMs(target, 1));
      const [original, again] = requests.map((request) => assertEventRequest(request, endpoint, rows));
      assert.equal(original!.deliveryId, delivery.delivery_id);
      assert.equal(again!.deliveryId, replay.delivery_id);
      assert.notEqual(again!.deliveryId, original!.deliveryId);
      assert.equal(again!.payload.event_id, original!.payload.event_id);
    });
  });

  describe('happy: deleting an endpoint stops its retries [op:deleteWebhook 204] [delivery:retry]', () => {
    it('after DELETE, a delivery still being retried is not sent again, while the same event keeps being retried to an endpoint beside it', async function () {
      requireRetriesWithin(this, target, 'all');
      const schedule = target.webhooks.retryScheduleSeconds;
      const deleted = await session.registerReceiver('deleted-while-retrying', ['verification.completed']);
      const control = await session.registerReceiver('kept-while-retrying', ['verification.completed']);
      session.receiver.answerAlways(deleted.path, 500);
      session.receiver.answerAlways(control.path, 500);
      const verification = await session.createVerification(synthetic);
      await session.receiver.waitForCount(deleted.path, 1, attemptWaitMs(target, 1));
      assert.equal((await session.remove(deleted.webhook.webhook_id)).status, 204);
      const sentBeforeDelete = session.receiver.requestsTo(deleted.path).length;
      // The control's delivery runs through the whole schedule: by then the deleted one's would have too.
      await logFor(control, verification.verification_id, finished, attemptWaitMs(target, schedule.length), 'the control delivery failed');
      assert.equal(session.receiver.requestsTo(control.path).length, schedule.length, 'the control got every attempt');
      assert.equal(session.receiver.requestsTo(deleted.path).length, sentBeforeDelete, 'the deleted endpoint was sent more attempts');
      assert.ok(sentBeforeDelete < schedule.length, 'the endpoint was deleted before its last attempt');
    });
  });

  describe("security: receivers' certificates are verified (D16) [delivery:verified https]", () => {
    it('a receiver whose certificate comes from a CA the service does not trust gets no request; the attempt is logged without a status and with an error', async function () {
      const other = makeTestCa();
      const untrusted = await WebhookReceiver.start(other, target.webhooks.receiverHost);
      try {
        const path = untrusted.newPath('untrusted-ca');
        const webhook = await session.register(untrusted.urlFor(path), ['verification.completed']);
        const endpoint = { webhook, secret: webhook.secret, path, url: untrusted.urlFor(path), events: webhook.events };
        const verification = await session.createVerification(synthetic);
        const { delivery } = await logFor(endpoint, verification.verification_id, (d) => d.attempts.length >= 1, attemptWaitMs(target, 1), 'the first attempt');
        const [attempt] = delivery.attempts;
        assert.equal(attempt!.status_code, null, 'no HTTP response: the TLS handshake must fail');
        assert.ok(attempt!.error && attempt!.error.length > 0, 'the error says why');
        assert.match(attempt!.error, TLS_ERROR, 'the error is about the certificate');
        assert.notEqual(delivery.status, 'succeeded');
        assert.deepEqual(untrusted.requestsTo(path), [], 'the body reached a receiver the service cannot authenticate');
        // Control: the receiver is up and answers a client that trusts its CA.
        assert.equal(await reach(untrusted.urlFor(untrusted.newPath('control')), { ca: other.ca }), 200);
      } finally {
        await untrusted.close();
        rmSync(other.dir, { recursive: true, force: true });
      }
    });

    it('a receiver whose certificate does not name the host it is reached at gets no request', async function () {
      if (target.webhooks.receiverHost !== '127.0.0.1') {
        skipBecause(this, 'needs the receiver on 127.0.0.1, reachable as 127.0.0.2');
      }
      // The suite's certificate names localhost, 127.0.0.1 and ::1; 127.0.0.2 is the same machine under another name.
      const wrongName = await WebhookReceiver.start(readCaDir(target.webhooks.caDir!), '127.0.0.2');
      try {
        const path = wrongName.newPath('wrong-name');
        const webhook = await session.register(wrongName.urlFor(path), ['verification.completed']);
        const endpoint = { webhook, secret: webhook.secret, path, url: wrongName.urlFor(path), events: webhook.events };
        const verification = await session.createVerification(synthetic);
        const { delivery } = await logFor(endpoint, verification.verification_id, (d) => d.attempts.length >= 1, attemptWaitMs(target, 1), 'the first attempt');
        assert.equal(delivery.attempts[0]!.status_code, null, 'no HTTP response: the certificate does not name 127.0.0.2');
        assert.match(delivery.attempts[0]!.error ?? '', TLS_ERROR, 'the error is about the certificate');
        assert.deepEqual(wrongName.requestsTo(path), []);
        // Control: with the trusted CA and no name check, the receiver answers.
        assert.equal(
          await reach(wrongName.urlFor(wrongName.newPath('control')), { ca: readCaDir(target.webhooks.caDir!).ca, checkServerIdentity: () => undefined }),
          200,
        );
      } finally {
        await wrongName.close();
      }
    });
  });

  describe('errors and security: replays (P15) [op:replayWebhookDelivery 404 not_found]', () => {
    it('an unknown delivery id, or one of another endpoint of the same lender: 404 not_found', async () => {
      const { endpoint, verificationId } = await oneEvent('replay-404');
      const other = await session.registerReceiver('replay-404-other', ['tape.updated']);
      const { delivery } = await logFor(endpoint, verificationId, finished, attemptWaitMs(target, 1), 'the delivery finished');
      assertError(await session.replay(endpoint.webhook.webhook_id, randomUUID()), 404, 'not_found');
      assertError(await session.replay(endpoint.webhook.webhook_id, 'not-a-delivery-id'), 404, 'not_found');
      assertError(await session.replay(other.webhook.webhook_id, delivery.delivery_id), 404, 'not_found');
    });

    it("another lender can neither read the log nor replay a delivery of lender A's endpoint: 404", async function () {
      requireKey(this, target, 'otherLender');
      const { endpoint, verificationId } = await oneEvent('replay-tenant');
      const { delivery } = await logFor(endpoint, verificationId, finished, attemptWaitMs(target, 1), 'the delivery finished');
      const log = await session.deliveries(endpoint.webhook.webhook_id, {}, 'otherLender');
      assertError(log, 404, 'not_found');
      assert.ok(!log.text.includes(delivery.delivery_id));
      assertError(await session.replay(endpoint.webhook.webhook_id, delivery.delivery_id, 'otherLender'), 404, 'not_found');
      const own = (await session.log(endpoint.webhook.webhook_id)).filter((d) => d.verification_id === verificationId);
      assert.deepEqual(
        own.map((d) => d.delivery_id),
        [delivery.delivery_id],
        'no replay was queued',
      );
    });
  });
});
