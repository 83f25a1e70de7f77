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
import type { AttemptRecord, DueDelivery, WebhooksRepository } from './webhooks-repository.ts';

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

describe('DeliveryWorker.runDue: recording a batch while the next is sent', function () {
  this.timeout(30_000);
  const encryptionKey = randomBytes(32);
  let certificates: TestCertificates;
  let receiver: TestReceiver;
  let url: string;
  let dispatcher: Agent;

  before(async () => {
    certificates = makeTestCertificates();
    receiver = new TestReceiver(certificates);
    url = await receiver.listen();
    dispatcher = createGuardedDispatcher({ allowPrivateTargets: true, connectTimeoutMs: 2_000, tls: { ca: certificates.ca } });
  });

  after(async () => {
    await dispatcher.close();
    await receiver.close();
  });

  /** A repository that hands out `batches` in turn and records through `record`. */
  const workerOver = (batches: DueDelivery[][], record: (records: AttemptRecord[]) => Promise<void>) =>
    new DeliveryWorker({
      webhooks: {
        claimDue: () => Promise.resolve(batches.shift() ?? []),
        recordAttempts: (_workerId: string, records: AttemptRecord[]) => record(records),
      } as unknown as WebhooksRepository,
      encryptionKey,
      scheduleSeconds: [0, 60],
      timeoutMs: 2_000,
      dispatcher,
      clock: systemClock,
      logger: createLogger({ level: 'silent' }),
    });
  const batchOf = (path: string, ids: string[]): DueDelivery[] =>
    ids.map((id) => ({
      id,
      webhookId: 'whk_test',
      eventName: 'verification.completed',
      attempts: 0,
      firstAttemptAt: null,
      url: `${url}${path}`,
      secretCiphertext: encryptSecret(encryptionKey, 'whsec_run_due'),
      previousSecretCiphertext: null,
      previousSecretExpiresAt: null,
      body: JSON.stringify({ id }),
    }));

  it('sends the next batch while the one before is still being recorded, and records them in order', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const recorded: string[][] = [];
    const worker = workerOver([batchOf('/overlap', ['a1', 'a2']), batchOf('/overlap', ['b1'])], async (records) => {
      if (recorded.length === 0) await held;
      recorded.push(records.map((r) => r.deliveryId));
    });
    const running = worker.runDue();
    for (let waited = 0; receiver.to('/overlap').length < 3; waited += 20) {
      assert.ok(waited < 5_000, 'the second batch was not sent while the first was being recorded');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.deepEqual(recorded, [], 'nothing recorded while the first recording is held');
    release();
    assert.equal(await running, 3);
    assert.deepEqual(recorded, [['a1', 'a2'], ['b1']]);
  });

  it('fails the pass with a recording’s error, with no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const worker = workerOver([batchOf('/failing', ['c1']), batchOf('/failing', ['d1'])], async (records) => {
        if (records[0]!.deliveryId === 'c1') throw new Error('the database is gone');
      });
      await assert.rejects(worker.runDue(), /the database is gone/);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
