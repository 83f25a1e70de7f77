import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Agent } from 'undici';
import { systemClock } from '../platform/clock.ts';
import { encryptSecret } from '../platform/crypto.ts';
import { createLogger } from '../platform/logger.ts';
import { makeTestCertificates, TestReceiver, type TestCertificates } from '../../test/support/test-receiver.ts';
import { DeliveryWorker } from './delivery-worker.ts';
import { createGuardedDispatcher } from './target-guard.ts';
import { verifyWebhookSignature } from './verify-signature.ts';
import type { WebhooksRepository } from './webhooks-repository.ts';

describe('DeliveryWorker.post: the receiver timeout', function () {
  this.timeout(30_000);
  const timeoutMs = 1_000;
  const connectionsPerOrigin = 2;
  const encryptionKey = randomBytes(32);
  const secret = 'whsec_delivery_worker_test';
  let certificates: TestCertificates;
  let receiver: TestReceiver;
  let url: string;
  let dispatcher: Agent;
  let worker: DeliveryWorker;

  before(async () => {
    certificates = makeTestCertificates();
    receiver = new TestReceiver(certificates);
    url = await receiver.listen();
    dispatcher = createGuardedDispatcher({ allowPrivateTargets: true, connectTimeoutMs: timeoutMs, connectionsPerOrigin, tls: { ca: certificates.ca } });
    worker = new DeliveryWorker({
      // post() neither claims nor records: the repository is never reached.
      webhooks: {} as WebhooksRepository,
      encryptionKey,
      scheduleSeconds: [0, 60],
      timeoutMs,
      dispatcher,
      clock: systemClock,
      logger: createLogger({ level: 'silent' }),
    });
  });

  after(async () => {
    await dispatcher.close();
    await receiver.close();
  });

  const postTo = (path: string, n: number) => {
    const endpoint = {
      url: `${url}${path}`,
      secretCiphertext: encryptSecret(encryptionKey, secret),
      previousSecretCiphertext: null,
      previousSecretExpiresAt: null,
    };
    return Promise.all(Array.from({ length: n }, (_, i) => worker.post(endpoint, JSON.stringify({ n: i }), 'webhook.test', `dlv_${i}`, new Date())));
  };

  it('does not count the wait for one of the origin’s connections against the receiver', async () => {
    // Six requests on two connections, each answered after 600 ms: the last two start on a
    // connection 1.2 s after they were sent for, past the 1 s timeout, and are answered in time.
    receiver.answerWith('/queued', ...Array.from({ length: 6 }, () => ({ status: 200, delayMs: 600 })));
    const results = await postTo('/queued', 6);
    assert.deepEqual(
      results.map((r) => [r.statusCode, r.error]),
      Array.from({ length: 6 }, () => [200, null]),
    );
    assert.ok(Math.max(...results.map((r) => r.durationMs)) >= 1_200, 'the last requests waited for a connection');
    const received = receiver.to('/queued');
    assert.equal(received.length, 6);
    for (const delivery of received) assert.ok(verifyWebhookSignature(delivery.rawBody, delivery.headers['x-service-signature'], secret));
  });

  it('counts a receiver slower than the timeout as a timeout', async () => {
    receiver.answerWith('/slow', { status: 200, delayMs: 1_500 });
    const [result] = await postTo('/slow', 1);
    assert.equal(result!.statusCode, null);
    assert.equal(result!.error, 'timeout: no response in time');
    assert.ok(result!.durationMs < 1_500, `gave up after ${result!.durationMs} ms`);
  });

  it('ends each attempt within twice the timeout, its wait for a connection included', async () => {
    // Answers after 900 ms each, two at a time: the fifth and sixth requests go out at about 1.8 s
    // and would be answered at 2.7 s, past the attempt's bound of 2 s.
    receiver.answerWith('/backlog', ...Array.from({ length: 6 }, () => ({ status: 200, delayMs: 900 })));
    const started = Date.now();
    const results = await postTo('/backlog', 6);
    const elapsed = Date.now() - started;
    assert.deepEqual(
      results.map((r) => r.error ?? r.statusCode),
      [200, 200, 200, 200, 'timeout: no response in time', 'timeout: no response in time'],
    );
    assert.ok(elapsed < 2 * timeoutMs + 400, `took ${elapsed} ms`);
  });
});
