import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { runAdmin } from '../../src/admin/run-admin.ts';
import { openDatabase } from '../../src/platform/db/database.ts';
import { verifyWebhookSignature } from '../../src/webhooks/verify-signature.ts';
import { startServerProcess } from '../support/server-process.ts';
import { testDatabases, type TestDatabase } from '../support/test-databases.ts';
import { makeTestCertificates, TestReceiver, type ReceivedDelivery } from '../support/test-receiver.ts';

/**
 * kill -9 of a separately started server in the middle of bulk creation, three times, with webhook
 * deliveries pending at each kill (the receiver down in one round, slow in the next). The client
 * does what section 4.1 asks of it: an Idempotency-Key on every POST, and a retry with the same key
 * after a failure. Afterwards:
 * - no verification twice: every key names one verification (replays give its id), and the
 *   data-subject access per obligor_reference counts exactly one verification per key;
 * - no event lost: every state change of every verification, and every `tape.updated` of every
 *   overlay, is acknowledged by the receiver at least once (D14), and nothing else is sent;
 * - order kept: per verification, the acknowledged events arrive in the order they happened
 *   (section 6.1), and once a later event is acknowledged an earlier one never comes again.
 */

const ROUNDS = 3;
const CREATIONS_PER_ROUND = 24;
const OVERLAYS_PER_VERIFICATION_PER_ROUND = 2;
const CONCURRENCY = 8;
/** Sandbox outcomes: a state change through the durable job queue, which must survive the kills too. */
const SCENARIOS = [
  { prefix: 'demo-yt-mid', unique: false, event: 'verification.completed' },
  { prefix: 'test-complete-', unique: true, event: 'verification.completed' },
  { prefix: 'test-fail-', unique: true, event: 'verification.failed' },
  { prefix: 'test-expire-', unique: true, event: 'verification.expired' },
] as const;
const EVENTS = ['verification.completed', 'verification.failed', 'verification.expired', 'tape.updated'];

interface Operation {
  key: string;
  path: string;
  body: object;
  /** The id the first answer gave, if one arrived before the kill. */
  answeredId?: string;
  /** The id after the retries: the one resource this key stands for. */
  id?: string;
}

interface Creation extends Operation {
  reference: string;
  event: string;
  overlays: Operation[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(condition: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await sleep(100);
  }
}

/** Runs `tasks` with at most `limit` at a time. */
async function inPool(tasks: Array<() => Promise<void>>, limit: number): Promise<void> {
  const queue = [...tasks];
  await Promise.all(
    Array.from({ length: limit }, async () => {
      for (let task = queue.shift(); task; task = queue.shift()) await task();
    }),
  );
}

for (const factory of testDatabases()) {
  describe(`chaos: kill -9 during bulk creation with webhooks pending, on ${factory.name}`, function () {
    this.timeout(120_000);
    let testDb: TestDatabase;
    let receiver: TestReceiver;
    let receiverUrl: string;
    let env: Record<string, string>;
    let lenderKey: string;
    let gdprKey: string;
    const children: ChildProcess[] = [];

    before(async () => {
      testDb = await factory.create();
      const certificates = makeTestCertificates();
      receiver = new TestReceiver(certificates);
      receiverUrl = await receiver.listen();
      env = {
        DATABASE_URL: testDb.url,
        SERVICE_MODE: 'sandbox',
        ENCRYPTION_KEY: 'c'.repeat(64),
        WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
        // An attempt every second for two minutes: no delivery runs out of attempts while the
        // receiver is down, and none waits long once it is up.
        WEBHOOK_RETRY_SCHEDULE: Array.from({ length: 120 }, (_, i) => i).join(','),
        // Short, so deliveries and jobs the killed process had claimed are claimed again soon
        // (a delivery's lease is twice the timeout + 5 s); the sandbox's jobs take milliseconds.
        WEBHOOK_TIMEOUT_MS: '2000',
        JOB_LEASE_MS: '3000',
        SANDBOX_COMPLETE_DELAY_MS: '1500',
        NODE_EXTRA_CA_CERTS: certificates.caFile,
      };
      const lender = await runAdmin(env, ['lender', 'create', '--name', 'Chaos Lending']);
      await runAdmin(env, ['lender', 'set', '--id', lender.id, '--rate-limit', '100000', '--burst', '10000']);
      lenderKey = (await runAdmin(env, ['key', 'create', '--lender', lender.id, '--role', 'lender'])).api_key;
      gdprKey = (await runAdmin(env, ['key', 'create', '--lender', lender.id, '--role', 'gdpr_admin'])).api_key;
    });
    after(async () => {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
      await receiver.close();
      await testDb.drop();
    });

    const start = async () => {
      const started = await startServerProcess(env);
      children.push(started.child);
      return started;
    };
    const call = (base: string, path: string, init: { method?: string; body?: object; key?: string; idempotencyKey?: string } = {}) =>
      fetch(`${base}${path}`, {
        method: init.method ?? 'GET',
        headers: {
          authorization: `Bearer ${init.key ?? lenderKey}`,
          'content-type': 'application/json',
          ...(init.idempotencyKey ? { 'idempotency-key': init.idempotencyKey } : {}),
        },
        body: init.body ? JSON.stringify(init.body) : undefined,
      });
    /** One POST with its key; the id it answered, or undefined when the server was gone. */
    const send = async (base: string, operation: Operation): Promise<string | undefined> => {
      let response: Response;
      try {
        response = await call(base, operation.path, { method: 'POST', body: operation.body, idempotencyKey: operation.key });
      } catch {
        return undefined;
      }
      const text = await response.text();
      assert.equal(response.status, 201, `${operation.path}: ${text}`);
      const body = JSON.parse(text) as { verification_id?: string; overlay_id?: string };
      return operation.path.endsWith('/overlays') ? body.overlay_id : body.verification_id;
    };

    /** A failure's evidence: each verification's status, events, deliveries and jobs, as stored. */
    const stateOf = async (missing: Creation[], acknowledgedIds: Set<string>): Promise<string> => {
      const db = openDatabase(testDb.url);
      try {
        const lines: string[] = [];
        for (const creation of missing) {
          const id = creation.id!;
          const verification = await db.knex('verifications').where({ id }).first('status');
          const events = await db.knex('events').where({ verification_id: id }).orderBy('sequence').select('id', 'sequence', 'name', 'occurred_at');
          const deliveries = await db
            .knex('webhook_deliveries')
            .where({ verification_id: id })
            .orderBy('event_sequence')
            .select('event_id', 'event_sequence', 'status', 'attempts', 'next_attempt_at', 'locked_by', 'locked_until');
          const jobs = await db.knex('jobs').where({ subject_id: id }).select('kind', 'status', 'attempts', 'run_at', 'locked_until', 'last_error');
          lines.push(
            JSON.stringify({
              reference: creation.reference,
              id,
              status: verification?.status,
              events: events.map((e) => ({ ...e, acknowledged: acknowledgedIds.has(e.id) })),
              deliveries,
              jobs,
            }),
          );
        }
        lines.push(`now ${new Date().toISOString()}`);
        return lines.join('\n');
      } finally {
        await db.close();
      }
    };

    it('loses no event, creates no verification twice and keeps the order per verification across three kills', async () => {
      const path = `/chaos-${randomUUID()}`;
      let server = await start();
      const registered = await call(server.base, '/api/v1/webhooks', { method: 'POST', body: { url: `${receiverUrl}${path}`, events: EVENTS } });
      assert.equal(registered.status, 201, await registered.clone().text());
      const { secret } = (await registered.json()) as { secret: string };

      const creations: Creation[] = [];
      let killedWith = { answered: 0, unanswered: 0 };
      for (let round = 0; round < ROUNDS; round++) {
        // Deliveries pending at the kill: the receiver refuses everything in even rounds and answers
        // slowly (so attempts are in flight when the process dies) in odd ones.
        receiver.clearScript(path);
        receiver.answerWith(path, ...Array<number | { status: number; delayMs: number }>(5000).fill(round % 2 === 0 ? 503 : { status: 200, delayMs: 1000 }));

        const fresh: Creation[] = Array.from({ length: CREATIONS_PER_ROUND }, (_, i) => {
          const scenario = SCENARIOS[i % SCENARIOS.length]!;
          const reference = scenario.unique ? `${scenario.prefix}${randomUUID()}` : scenario.prefix;
          return {
            key: randomUUID(),
            path: '/api/v1/verifications',
            body: { obligor_reference: reference, creator_platforms: ['youtube'] },
            reference,
            event: scenario.event,
            overlays: [],
          };
        });
        // Overlays on the verifications completed at creation in earlier rounds: each a chain sent one
        // after the other, so the order of their tape.updated events is the order of the keys.
        const chains = creations
          .filter((c) => !c.reference.startsWith('test-'))
          .map((creation) => {
            const added = Array.from({ length: OVERLAYS_PER_VERIFICATION_PER_ROUND }, (_, i): Operation => ({
              key: randomUUID(),
              path: `/api/v1/verifications/${creation.id}/overlays`,
              body: { type: 'kyb', provider: 'Chaos KYB', reference: `round-${round}-${i}`, status: 'verified', observed_at: new Date().toISOString() },
            }));
            creation.overlays.push(...added);
            return added;
          });
        creations.push(...fresh);

        // The bulk: creations and overlay chains side by side; the process is killed once half of
        // them have been answered, with the rest in flight or not yet sent.
        const total = fresh.length + chains.flat().length;
        let answered = 0;
        const victim = server.child;
        const onAnswer = (id: string | undefined) => {
          if (id !== undefined && ++answered === Math.ceil(total / 2)) victim.kill('SIGKILL');
        };
        await inPool(
          [
            ...fresh.map((c) => async () => {
              c.answeredId = await send(server.base, c);
              onAnswer(c.answeredId);
            }),
            ...chains.map((chain) => async () => {
              for (const overlay of chain) {
                overlay.answeredId = await send(server.base, overlay);
                onAnswer(overlay.answeredId);
                if (overlay.answeredId === undefined) break;
                await sleep(3);
              }
            }),
          ],
          CONCURRENCY,
        );
        if (victim.exitCode === null && victim.signalCode === null) await once(victim, 'exit');
        assert.equal(victim.signalCode, 'SIGKILL');
        const unanswered = [...fresh, ...chains.flat()].filter((o) => o.answeredId === undefined).length;
        assert.ok(unanswered > 0, 'the kill interrupted nothing');
        killedWith = { answered: killedWith.answered + answered, unanswered: killedWith.unanswered + unanswered };

        // A new process; the client retries every request of the round with the same key: the
        // answered ones replay, the others are created now, each exactly once.
        server = await start();
        await inPool(
          [
            ...fresh.map((c) => async () => {
              c.id = await send(server.base, c);
            }),
            ...chains.map((chain) => async () => {
              for (const overlay of chain) {
                overlay.id = await send(server.base, overlay);
                await sleep(3);
              }
            }),
          ],
          CONCURRENCY,
        );
        for (const operation of [...fresh, ...chains.flat()]) {
          assert.ok(operation.id, `${operation.path}: no answer after the restart`);
          if (operation.answeredId !== undefined) assert.equal(operation.id, operation.answeredId, `${operation.path}: the same key gave another id`);
        }
      }

      // The receiver is up for good; everything owed must arrive.
      receiver.clearScript(path);
      type Event = { event: string; event_id: string; verification_id: string; occurred_at: string };
      const acknowledged = () =>
        receiver
          .to(path)
          .filter((r: ReceivedDelivery) => r.status >= 200 && r.status < 300)
          .map((r) => ({ delivery: r, body: JSON.parse(r.rawBody.toString()) as Event }));
      const expectedEvents = creations.reduce((n, c) => n + 1 + c.overlays.length, 0);
      const distinctAcknowledged = () => new Set(acknowledged().map((a) => a.body.event_id)).size;
      try {
        await waitFor(
          () => distinctAcknowledged() >= expectedEvents,
          60_000,
          () => `${expectedEvents} events acknowledged (have ${distinctAcknowledged()})`,
        );
      } catch (error) {
        const seen = new Set(acknowledged().map((a) => a.body.event_id));
        const distinctOf = (id: string | undefined) =>
          new Set(
            acknowledged()
              .filter((a) => a.body.verification_id === id)
              .map((a) => a.body.event_id),
          ).size;
        const missing = creations.filter((c) => distinctOf(c.id) < 1 + c.overlays.length);
        const evidence = await stateOf(missing, seen).catch((failed: unknown) => `(not read: ${String(failed)})`);
        throw new Error(`${(error as Error).message}; what the database holds of the verifications short of events:\n${evidence}`);
      }
      // Anything still in flight (a duplicate, or an event that should not exist) has time to show.
      await sleep(1500);

      const received = acknowledged();
      for (const { delivery } of received) assert.ok(verifyWebhookSignature(delivery.rawBody, delivery.headers['x-service-signature'], secret));
      const byVerification = new Map<string, Event[]>();
      for (const { body } of received) byVerification.set(body.verification_id, [...(byVerification.get(body.verification_id) ?? []), body]);
      const known = new Set(creations.map((c) => c.id));
      const strangers = [...byVerification.keys()].filter((id) => !known.has(id));
      assert.deepEqual(strangers, [], 'events of verifications no key created: a verification was created twice');

      for (const creation of creations) {
        const events = byVerification.get(creation.id!) ?? [];
        const distinct = [...new Map(events.map((e) => [e.event_id, e])).values()];
        // No event lost: the state change, and one tape.updated per overlay key.
        assert.deepEqual(
          distinct.map((e) => e.event),
          [creation.event, ...creation.overlays.map(() => 'tape.updated')],
          `events of ${creation.id} (${creation.reference}) in order of first acknowledgement`,
        );
        // Order kept: the overlays were attached one after the other, so each tape.updated happened
        // after the one before it; and no event comes again once a later one was acknowledged.
        for (let i = 1; i < distinct.length; i++) assert.ok(distinct[i]!.occurred_at > distinct[i - 1]!.occurred_at, `order of ${creation.id}`);
        const rank = new Map(distinct.map((e, i) => [e.event_id, i]));
        const ranks = events.map((e) => rank.get(e.event_id)!);
        assert.deepEqual(
          ranks,
          [...ranks].sort((a, b) => a - b),
          `an earlier event of ${creation.id} came again after a later one`,
        );
      }

      // No verification twice, counted by the API: the data-subject access of each obligor_reference.
      const references = new Map<string, number>();
      for (const c of creations) references.set(c.reference, (references.get(c.reference) ?? 0) + 1);
      for (const [reference, keys] of references) {
        const access = await call(server.base, `/api/v1/gdpr/access?obligor_id=${encodeURIComponent(reference)}`, { key: gdprKey });
        assert.equal(access.status, 200, await access.clone().text());
        const report = (await access.json()) as { verifications: Array<{ verification_id: string }> };
        assert.equal(report.verifications.length, keys, `verifications of ${reference}`);
      }
      const duplicates = received.length - distinctAcknowledged();
      console.log(
        `      ${ROUNDS} kills: ${killedWith.answered} requests answered and ${killedWith.unanswered} cut off before them; ` +
          `${creations.length} verifications, ${expectedEvents} events, ${duplicates} delivered again (at least once, D14)`,
      );
      server.child.kill('SIGTERM');
      await once(server.child, 'exit');
    });
  });
}
