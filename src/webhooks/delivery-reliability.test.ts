import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';
import { makeTestCertificates, TestReceiver, type TestCertificates } from '../../test/support/test-receiver.ts';
import { startServerProcess } from '../../test/support/server-process.ts';
import { runAdmin } from '../admin/run-admin.ts';

/** A real server process trusting the test CA the way D16 says. */
function startServer(databaseUrl: string, certificates: TestCertificates) {
  return startServerProcess({
    DATABASE_URL: databaseUrl,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
    WEBHOOK_RETRY_SCHEDULE: '0,1,2,3,4',
    // Short, so deliveries claimed by a killed process are claimed again quickly.
    WEBHOOK_TIMEOUT_MS: '2000',
    NODE_EXTRA_CA_CERTS: certificates.caFile,
  });
}

async function waitFor(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

for (const factory of testDatabases()) {
  describe(`webhook delivery reliability on ${factory.name}`, function () {
    this.timeout(120_000);
    let testDb: TestDatabase;
    let certificates: TestCertificates;
    let receiver: TestReceiver;
    let receiverUrl: string;
    let key: string;
    const children: ChildProcess[] = [];

    before(async () => {
      testDb = await factory.create();
      certificates = makeTestCertificates();
      receiver = new TestReceiver(certificates);
      receiverUrl = await receiver.listen();
      const lender = await runAdmin({ DATABASE_URL: testDb.url }, ['lender', 'create', '--name', 'Reliability Lender']);
      key = (await runAdmin({ DATABASE_URL: testDb.url }, ['key', 'create', '--lender', lender.id, '--role', 'lender'])).api_key;
    });
    after(async () => {
      for (const child of children) child.kill('SIGKILL');
      await receiver.close();
      await testDb.drop();
    });

    const post = (base: string, path: string, body: object, headers: Record<string, string> = {}) =>
      fetch(`${base}/api/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    const eventIdsAt = (path: string) => receiver.to(path).map((r) => JSON.parse(r.rawBody.toString()).event_id as string);

    it('delivers every event after the server is killed with deliveries pending', async () => {
      const first = await startServer(testDb.url, certificates);
      children.push(first.child);
      const path = `/crash-${randomUUID()}`;
      // The receiver is down until the process dies, so deliveries are pending then, however many
      // retries a slow machine fits in before the kill.
      const downAnswers = 1000;
      receiver.answerWith(path, ...Array(downAnswers).fill(503));
      const registered = await post(first.base, '/webhooks', { url: `${receiverUrl}${path}`, events: ['verification.completed'] });
      assert.equal(registered.status, 201, await registered.text());
      const created: string[] = [];
      for (let i = 0; i < 20; i++) {
        const response = await post(
          first.base,
          '/verifications',
          { obligor_reference: 'demo-yt-mid', creator_platforms: ['youtube'] },
          { 'idempotency-key': randomUUID() },
        );
        assert.equal(response.status, 201);
        created.push(((await response.json()) as { verification_id: string }).verification_id);
      }
      first.child.kill('SIGKILL');
      await once(first.child, 'exit');
      // Every request so far got one of the scripted 503s: nothing was acknowledged before the kill.
      const answeredBeforeKill = receiver.to(path).length;
      assert.ok(answeredBeforeKill < downAnswers);
      receiver.clearScript(path);
      const second = await startServer(testDb.url, certificates);
      children.push(second.child);
      // Requests after the kill are answered 200: those are the acknowledged deliveries.
      const acknowledged = () =>
        new Set(
          receiver
            .to(path)
            .slice(answeredBeforeKill)
            .map((r) => JSON.parse(r.rawBody.toString()).verification_id),
        );
      await waitFor(() => acknowledged().size === 20, 30_000, 'every event acknowledged after the restart');
      assert.deepEqual([...acknowledged()].sort(), created.sort());
      second.child.kill('SIGTERM');
      await once(second.child, 'exit');
    });

    if (factory.name === 'postgres') {
      it('lets two server processes deliver one batch together, each event once', async () => {
        const [a, b] = [await startServer(testDb.url, certificates), await startServer(testDb.url, certificates)];
        children.push(a.child, b.child);
        const path = `/shared-${randomUUID()}`;
        assert.equal((await post(a.base, '/webhooks', { url: `${receiverUrl}${path}`, events: ['verification.completed'] })).status, 201);
        const count = 60;
        await Promise.all(
          Array.from({ length: count }, (_, i) =>
            post(
              i % 2 ? a.base : b.base,
              '/verifications',
              { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] },
              { 'idempotency-key': randomUUID() },
            ),
          ),
        );
        await waitFor(() => receiver.to(path).length >= count, 30_000, `${count} deliveries`);
        await new Promise((r) => setTimeout(r, 1500));
        const ids = eventIdsAt(path);
        assert.equal(ids.length, count, 'an event was delivered twice');
        assert.equal(new Set(ids).size, count);
        assert.equal(new Set(receiver.to(path).map((r) => r.headers['x-service-delivery'])).size, count);
      });
    }
  });
}
