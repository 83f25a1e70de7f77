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
    // Signed with the endpoint's secret, opened once and kept for the deliveries after.
    for (const delivery of receiver.to('/overlap'))
      assert.ok(verifyWebhookSignature(delivery.rawBody, delivery.headers['x-service-signature'], 'whsec_run_due'));
  });

  it('records the batch sent after a failed recording before the pass fails', async () => {
    const recorded: string[][] = [];
    const worker = workerOver([batchOf('/after-failure', ['e1']), batchOf('/after-failure', ['f1']), batchOf('/after-failure', ['g1'])], async (records) => {
      const ids = records.map((r) => r.deliveryId);
      if (ids[0] === 'e1') throw new Error('the recording failed');
      recorded.push(ids);
    });
    await assert.rejects(worker.runDue(), /the recording failed/);
    assert.deepEqual(recorded, [['f1']], 'f1 was sent while e1 was being recorded: it is recorded, and nothing more is claimed');
    assert.deepEqual(
      receiver.to('/after-failure').map((r) => JSON.parse(r.rawBody.toString()).id),
      ['e1', 'f1'],
    );
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
