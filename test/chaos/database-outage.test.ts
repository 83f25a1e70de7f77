import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { runAdmin } from '../../src/admin/run-admin.ts';
import { DOCUMENTED_ANSWER_BOUND_MS } from '../../src/platform/db/database.ts';
import { startServerProcess, type ProcessOutput } from '../support/server-process.ts';
import { TcpRelay } from '../support/tcp-relay.ts';
import { testDatabases, type TestDatabase } from '../support/test-databases.ts';

/**
 * PostgreSQL stopped, then frozen, under a separately started server process, through a relay
 * between the two (the shared PostgreSQL itself is never stopped or frozen). README, "Timeouts":
 * every request answers within the bound with `503 service_unavailable` and `Retry-After`
 * (a consent page too, as a page), `/readyz` says so while `/healthz` does not, and the same
 * process serves again once the database is back, without a restart. A creation refused with 503
 * is retried with its Idempotency-Key afterwards and creates exactly one verification.
 */

/** The README's bound: a pooled connection (5 s), then the statement (4 s), and the answer within 10 s. */
const ANSWER_BOUND_MS = DOCUMENTED_ANSWER_BOUND_MS;

const postgres = testDatabases().find((f) => f.name === 'postgres');

describe('chaos: PostgreSQL stopped and frozen under a separate server process', function () {
  this.timeout(120_000);
  if (!postgres) {
    it.skip('skipped: set TEST_POSTGRES_URL to a PostgreSQL server (CI does) to run the database outage chaos tests');
    return;
  }
  let testDb: TestDatabase;
  let relay: TcpRelay;
  let server: { child: ChildProcess; base: string };
  let key: string;
  let gdprKey: string;
  let existing: string;
  let consentUrl: string;
  const output: ProcessOutput = { lines: [] };

  before(async () => {
    testDb = await postgres.create();
    const target = new URL(testDb.url);
    relay = new TcpRelay({ host: target.hostname, port: Number(target.port || 5432) });
    const relayedUrl = await relay.relayedUrl(testDb.url);
    // The operator CLI talks to PostgreSQL directly; only the server goes through the relay.
    const direct = { DATABASE_URL: testDb.url, ENCRYPTION_KEY: 'd'.repeat(64) };
    const lender = await runAdmin(direct, ['lender', 'create', '--name', 'Outage Lending']);
    await runAdmin(direct, ['lender', 'set', '--id', lender.id, '--rate-limit', '100000', '--burst', '10000']);
    key = (await runAdmin(direct, ['key', 'create', '--lender', lender.id, '--role', 'lender'])).api_key;
    gdprKey = (await runAdmin(direct, ['key', 'create', '--lender', lender.id, '--role', 'gdpr_admin'])).api_key;
    // At warn, so that what an outage logs is seen (request lines are info, 503 ones error).
    server = await startServerProcess({ ...direct, DATABASE_URL: relayedUrl, LOG_LEVEL: 'warn' }, { output });
    const created = await create(randomUUID(), `creator-${randomUUID()}`);
    assert.equal(created.status, 201);
    ({ verification_id: existing, consent_url: consentUrl } = (await created.json()) as { verification_id: string; consent_url: string });
  });
  after(async () => {
    relay.thaw();
    if (server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await once(server.child, 'exit');
    }
    relay.close();
    await testDb.drop();
  });

  // A request that hangs fails the test soon after the bound instead of at the test's timeout.
  const call = (path: string, init: { method?: string; body?: object; idempotencyKey?: string; auth?: string | null } = {}) =>
    fetch(`${server.base}${path}`, {
      signal: AbortSignal.timeout(ANSWER_BOUND_MS + 5_000),
      method: init.method ?? 'GET',
      headers: {
        ...(init.auth === null ? {} : { authorization: `Bearer ${init.auth ?? key}` }),
        'content-type': 'application/json',
        ...(init.idempotencyKey ? { 'idempotency-key': init.idempotencyKey } : {}),
      },
      body: init.body ? JSON.stringify(init.body) : undefined,
    });
  const create = (idempotencyKey: string, reference: string) =>
    call('/api/v1/verifications', { method: 'POST', idempotencyKey, body: { obligor_reference: reference, creator_platforms: ['youtube'] } });

  /**
   * What clients do during the outage, all at once: reads, creations (each with its own key and
   * reference), webhook management, the consent page, the probes. Each answer with its time.
   */
  const duringOutage = async () => {
    const creations = Array.from({ length: 4 }, () => ({ key: randomUUID(), reference: `creator-${randomUUID()}` }));
    const requests: Array<[string, () => Promise<Response>]> = [
      ...Array.from({ length: 4 }, (): [string, () => Promise<Response>] => [`GET verification`, () => call(`/api/v1/verifications/${existing}`)]),
      ['GET tape', () => call(`/api/v1/verifications/${existing}/tape`)],
      ['GET webhooks', () => call('/api/v1/webhooks')],
      ['GET gdpr access', () => call(`/api/v1/gdpr/access?obligor_id=x`, { auth: gdprKey })],
      ...creations.map((c): [string, () => Promise<Response>] => [`POST verification`, () => create(c.key, c.reference)]),
      ['GET consent page', () => fetch(consentUrl, { signal: AbortSignal.timeout(ANSWER_BOUND_MS + 5_000) })],
      ['GET /readyz', () => call('/readyz', { auth: null })],
    ];
    const answers = await Promise.all(
      requests.map(async ([what, send]) => {
        const started = Date.now();
        const response = await send();
        const text = await response.text();
        return { what, status: response.status, retryAfter: response.headers.get('retry-after'), text, tookMs: Date.now() - started };
      }),
    );
    return { answers, creations };
  };

  const assertBounded503s = (answers: Awaited<ReturnType<typeof duringOutage>>['answers']) => {
    for (const answer of answers) {
      assert.equal(answer.status, 503, `${answer.what}: ${answer.status} ${answer.text.slice(0, 200)}`);
      assert.ok(Number(answer.retryAfter) >= 1, `${answer.what}: Retry-After ${answer.retryAfter}`);
      assert.ok(
        answer.tookMs <= ANSWER_BOUND_MS,
        `${answer.what} took ${answer.tookMs} ms; all: ${answers.map((a) => `${a.what} ${a.status} ${a.tookMs}`).join(', ')}`,
      );
      if (answer.what !== 'GET consent page') assert.equal(JSON.parse(answer.text).error, 'service_unavailable', answer.what);
    }
  };

  /** Back to normal in the same process: ready, reads answer, the refused creations go through once. */
  const assertRecovered = async (creations: Array<{ key: string; reference: string }>) => {
    const pid = server.child.pid;
    const deadline = Date.now() + 20_000;
    while ((await call('/readyz', { auth: null })).status !== 200) {
      assert.ok(Date.now() < deadline, 'not ready again 20 s after the database came back');
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(server.child.exitCode, null);
    assert.equal(server.child.pid, pid);
    assert.equal((await call(`/api/v1/verifications/${existing}`)).status, 200);
    assert.equal((await fetch(consentUrl)).status, 200);
    for (const creation of creations) {
      const first = await create(creation.key, creation.reference);
      assert.equal(first.status, 201, await first.clone().text());
      const again = await create(creation.key, creation.reference);
      assert.equal(
        ((await again.json()) as { verification_id: string }).verification_id,
        ((await first.json()) as { verification_id: string }).verification_id,
      );
      const access = await call(`/api/v1/gdpr/access?obligor_id=${encodeURIComponent(creation.reference)}`, { auth: gdprKey });
      assert.equal(((await access.json()) as { verifications: unknown[] }).verifications.length, 1, `verifications of ${creation.reference}`);
    }
  };

  /**
   * Every line the process wrote since `from` is a JSON log line, and the outage is told once when
   * it begins and once when it ends, however long it lasts and however much kept failing meanwhile
   * (the job runner, the delivery worker, Knex's connection attempts).
   */
  /** Lines of one request each: as many as the requests the test sends, whatever the outage's length. */
  const PER_REQUEST = new Set(['request completed', 'database unavailable', 'consent page: database unavailable']);
  const assertOutageLoggedOnce = (from: number) => {
    const lines = output.lines.slice(from);
    const parsed = lines.map(({ stream, text }) => {
      try {
        return JSON.parse(text) as { msg: string; level: number };
      } catch {
        assert.fail(`the server wrote a line that is not JSON to ${stream}: ${text}\n(${lines.length} lines since the outage began)`);
      }
    });
    const messages = parsed.filter((line) => !PER_REQUEST.has(line.msg)).map((line) => line.msg);
    assert.deepEqual(messages, ['database unavailable: requests answer 503 until it answers again', 'database answering again'], JSON.stringify(messages));
  };

  it('stopped (connections reset and refused): bounded 503s with Retry-After, /readyz 503, /healthz 200, and recovery without a restart', async () => {
    const from = output.lines.length;
    await relay.cut();
    const { answers, creations } = await duringOutage();
    assertBounded503s(answers);
    assert.equal((await call('/healthz', { auth: null })).status, 200, 'the process is alive');
    // Long enough for the background loops to fail many passes (they poll every second or less).
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    await relay.restore();
    await assertRecovered(creations);
    assertOutageLoggedOnce(from);
    console.log(`      stopped: ${answers.length} requests, slowest ${Math.max(...answers.map((a) => a.tookMs))} ms`);
  });

  it('frozen (no bytes either way, nothing closed): bounded 503s with Retry-After, /readyz 503, and recovery without a restart', async () => {
    const from = output.lines.length;
    relay.freeze();
    const { answers, creations } = await duringOutage();
    assertBounded503s(answers);
    assert.equal((await call('/healthz', { auth: null })).status, 200, 'the process is alive');
    relay.thaw();
    await assertRecovered(creations);
    assertOutageLoggedOnce(from);
    console.log(`      frozen: ${answers.length} requests, slowest ${Math.max(...answers.map((a) => a.tookMs))} ms`);
  });
});
