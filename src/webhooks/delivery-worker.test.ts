import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Agent } from 'undici';
import { systemClock } from '../platform/clock.ts';
import { encryptSecret } from '../platform/crypto.ts';
import { createLogger } from '../platform/logger.ts';
import { webhookDeferrals } from '../platform/metrics/metrics.ts';
import { makeTestCertificates, TestReceiver, type ReceivedDelivery, type TestCertificates } from '../../test/support/test-receiver.ts';
import { DeliveryWorker } from './delivery-worker.ts';
import { createGuardedDispatcher } from './target-guard.ts';
import { verifyWebhookSignature } from './verify-signature.ts';
import type { AttemptRecord, Deferral, DueDelivery, WebhooksRepository } from './webhooks-repository.ts';

/** Claimed deliveries to `url`, one per id, each body naming its id, signed with `secret`. */
function dueDeliveries(encryptionKey: Buffer, url: string, ids: string[], secret: string): DueDelivery[] {
  return ids.map((id) => ({
    id,
    webhookId: 'whk_test',
    eventName: 'verification.completed',
    attempts: 0,
    firstAttemptAt: null,
    url,
    secretCiphertext: encryptSecret(encryptionKey, secret),
    previousSecretCiphertext: null,
    previousSecretExpiresAt: null,
    body: JSON.stringify({ id }),
  }));
}

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
  const workerOver = (
    batches: DueDelivery[][],
    record: (records: AttemptRecord[], claimant: string) => Promise<void>,
    claimed: (claimant: string) => void = () => undefined,
  ) =>
    new DeliveryWorker({
      webhooks: {
        claimDue: (claimant: string) => {
          claimed(claimant);
          return Promise.resolve(batches.shift() ?? []);
        },
        recordAttempts: (claimant: string, records: AttemptRecord[]) => record(records, claimant),
      } as unknown as WebhooksRepository,
      encryptionKey,
      scheduleSeconds: [0, 60],
      timeoutMs: 2_000,
      dispatcher,
      clock: systemClock,
      logger: createLogger({ level: 'silent' }),
    });
  const batchOf = (path: string, ids: string[]): DueDelivery[] => dueDeliveries(encryptionKey, `${url}${path}`, ids, 'whsec_run_due');

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

  it('claims each batch as its own claimant and records it as that claimant', async () => {
    const claimants: string[] = [];
    const recordedBy: string[] = [];
    const worker = workerOver(
      [batchOf('/claimants', ['k1']), batchOf('/claimants', ['k2'])],
      async (_records, claimant) => {
        recordedBy.push(claimant);
      },
      (claimant) => claimants.push(claimant),
    );
    assert.equal(await worker.runDue(), 2);
    // A claim that outlived its lease may be claimed again by another pass of the same process: the
    // first claim's recording must not match the second's rows.
    assert.equal(new Set(claimants).size, claimants.length, `claimants ${claimants.join(', ')}`);
    assert.deepEqual(recordedBy, claimants.slice(0, 2));
    assert.ok(claimants.every((claimant) => claimant.startsWith(worker.workerId) && claimant.length <= 64));
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

describe('DeliveryWorker: connections per receiver origin', function () {
  this.timeout(30_000);
  const encryptionKey = randomBytes(32);
  const certificates = makeTestCertificates();
  const receivers: TestReceiver[] = [];
  const dispatchers: Agent[] = [];

  afterEach(async () => {
    for (const dispatcher of dispatchers.splice(0)) await dispatcher.close();
    for (const receiver of receivers.splice(0)) await receiver.close();
  });

  const startReceiver = async () => {
    const receiver = new TestReceiver(certificates);
    receivers.push(receiver);
    return { receiver, url: await receiver.listen() };
  };

  /** A worker whose one claim hands out `due`; what it recorded and deferred, and the lease it asked for. */
  const workerFor = (due: DueDelivery[], options: { connectionsPerOrigin: number; timeoutMs: number }) => {
    const dispatcher = createGuardedDispatcher({ allowPrivateTargets: true, connectTimeoutMs: 2_000, tls: { ca: certificates.ca } });
    dispatchers.push(dispatcher);
    const seen = { records: [] as AttemptRecord[], deferral: undefined as Deferral | undefined, leaseMs: 0 };
    const batches = [due];
    const worker = new DeliveryWorker({
      webhooks: {
        claimDue: (_workerId: string, _now: Date, _limit: number, leaseMs: number) => {
          seen.leaseMs = leaseMs;
          return Promise.resolve(batches.shift() ?? []);
        },
        recordAttempts: async (_workerId: string, records: AttemptRecord[], deferral: Deferral) => {
          seen.records.push(...records);
          seen.deferral = deferral;
        },
      } as unknown as WebhooksRepository,
      encryptionKey,
      scheduleSeconds: [0, 60],
      dispatcher,
      clock: systemClock,
      logger: createLogger({ level: 'silent' }),
      ...options,
    });
    return { worker, seen };
  };
  const deliveriesTo = (url: string, ids: string[]): DueDelivery[] => dueDeliveries(encryptionKey, url, ids, 'whsec_connections');
  const deferralsCounted = async () => (await webhookDeferrals.get()).values[0]?.value ?? 0;
  const idsOf = (deliveries: ReceivedDelivery[]) => deliveries.map((d) => JSON.parse(d.rawBody.toString()).id as string);

  it('keeps at most the bound in flight to one origin, over as many kept-alive connections', async () => {
    const { receiver, url } = await startReceiver();
    const ids = Array.from({ length: 12 }, (_, i) => `n${i}`);
    receiver.answerWith('/bounded', ...ids.map(() => ({ status: 200, delayMs: 50 })));
    const { worker, seen } = workerFor(deliveriesTo(`${url}/bounded`, ids), { connectionsPerOrigin: 3, timeoutMs: 5_000 });
    assert.equal(await worker.runDue(), 12);
    assert.deepEqual(idsOf(receiver.to('/bounded')).sort(), [...ids].sort());
    assert.equal(receiver.mostInFlight, 3, 'three at a time');
    assert.ok(receiver.connectionsOpened <= 3, `${receiver.connectionsOpened} connections for three in flight`);
    assert.deepEqual(
      seen.records.map((r) => [r.attempt.attempt, r.attempt.statusCode, r.outcome.status]),
      ids.map(() => [1, 200, 'succeeded']),
    );
    assert.deepEqual(seen.deferral?.deliveryIds, []);
  });

  it('defers, without spending an attempt, a delivery that waited the receiver timeout for a connection', async () => {
    const { receiver, url } = await startReceiver();
    // One connection: d1 holds it 1.8 s, d2 then waits 1.8 s of its 3 and holds it 1.8 s more, d3
    // would wait 3.6 s.
    receiver.answerWith('/deferred', { status: 200, delayMs: 1_800 }, { status: 200, delayMs: 1_800 }, { status: 200, delayMs: 1_800 });
    const { worker, seen } = workerFor(deliveriesTo(`${url}/deferred`, ['d1', 'd2', 'd3']), { connectionsPerOrigin: 1, timeoutMs: 3_000 });
    const deferralsBefore = await deferralsCounted();
    const started = Date.now();
    assert.equal(await worker.runDue(), 2);
    assert.deepEqual(idsOf(receiver.to('/deferred')), ['d1', 'd2']);
    assert.equal((await deferralsCounted()) - deferralsBefore, 1, 'counted for the operators (civ_webhook_deferrals_total)');
    assert.deepEqual(
      seen.records.map((r) => [r.deliveryId, r.attempt.statusCode, r.attempt.error]),
      [
        ['d1', 200, null],
        ['d2', 200, null],
      ],
    );
    assert.deepEqual(seen.deferral?.deliveryIds, ['d3']);
    // Due again one receiver timeout after its batch ended (3.6 s), not at once behind the same busy connection.
    const until = Date.parse(seen.deferral.until);
    assert.ok(until >= started + 3_600 + 3_000 - 50 && until <= Date.now() + 3_000, `deferred until ${seen.deferral.until}`);
    // The claim outlasts the longest an attempt can take: its wait for a connection, then the receiver's time.
    assert.ok(seen.leaseMs > 2 * 3_000, `lease ${seen.leaseMs} ms`);
  });

  it('stopping sends nothing more: a delivery still waiting for a connection is handed back, due at once', async () => {
    const { receiver, url } = await startReceiver();
    receiver.answerWith('/stopping', { status: 200, delayMs: 1_000 });
    const { worker, seen } = workerFor(deliveriesTo(`${url}/stopping`, ['h1', 'h2']), { connectionsPerOrigin: 1, timeoutMs: 5_000 });
    worker.start(60_000);
    for (let waited = 0; receiver.to('/stopping').length === 0; waited += 20) {
      assert.ok(waited < 2_000, 'h1 was not sent');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const deferralsBefore = await deferralsCounted();
    const stopping = Date.now();
    await worker.stop();
    const stoppedAt = Date.now();
    assert.ok(stoppedAt - stopping < 1_500, `stopped after ${stoppedAt - stopping} ms: h1's answer, not h2's attempt too`);
    assert.deepEqual(idsOf(receiver.to('/stopping')), ['h1']);
    assert.deepEqual(
      seen.records.map((r) => [r.deliveryId, r.attempt.statusCode]),
      [['h1', 200]],
    );
    assert.deepEqual(seen.deferral?.deliveryIds, ['h2']);
    assert.ok(Date.parse(seen.deferral.until) <= stoppedAt, 'due at once, for any process');
    assert.equal(await deferralsCounted(), deferralsBefore, 'not a receiver’s doing: not counted');
  });

  it('bounds each origin on its own: a busy receiver does not hold up another', async () => {
    const slow = await startReceiver();
    const fast = await startReceiver();
    slow.receiver.answerWith('/slow', { status: 200, delayMs: 1_500 }, { status: 200, delayMs: 1_500 });
    const due = [...deliveriesTo(`${slow.url}/slow`, ['s1', 's2']), ...deliveriesTo(`${fast.url}/fast`, ['f1'])];
    const { worker } = workerFor(due, { connectionsPerOrigin: 1, timeoutMs: 5_000 });
    const started = Date.now();
    const running = worker.runDue();
    for (let waited = 0; fast.receiver.to('/fast').length === 0; waited += 20) {
      assert.ok(waited < 1_000, 'the other origin waited for the busy one');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.ok(Date.now() - started < 1_500, 'sent before the busy receiver answered');
    assert.equal(await running, 3);
    assert.equal(slow.receiver.mostInFlight, 1);
  });
});
