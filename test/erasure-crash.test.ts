import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { runAdmin } from '../src/admin/run-admin.ts';
import { startGoogleSimulator, type GoogleSimulator } from './simulators/google.ts';
import { providerEnv } from './simulators/provider-env.ts';
import { startStripeSimulator, type StripeSimulator } from './simulators/stripe.ts';
import { bindingCookieOf, pressOnProviderPage } from './support/provider-page.ts';
import { startServerProcess } from './support/server-process.ts';
import { testDatabases, type TestDatabase } from './support/test-databases.ts';

const lastMonths = (count: number, now = new Date()) =>
  Array.from({ length: count }, (_, i) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - count + i, 1)).toISOString().slice(0, 7));

/**
 * The server killed (SIGKILL) in the middle of an erasure: after a restart the creator's data is
 * either all there (and a repeated erasure completes) or all gone, never half-erased (P20).
 */
for (const factory of testDatabases()) {
  describe(`erasure interrupted by a crash on ${factory.name}`, function () {
    this.timeout(120_000);
    let testDb: TestDatabase;
    let google: GoogleSimulator;
    let stripe: StripeSimulator;
    let env: Record<string, string>;
    let lenderKey: string;
    let gdprKey: string;
    const children: ChildProcess[] = [];

    before(async () => {
      testDb = await factory.create();
      google = await startGoogleSimulator();
      stripe = await startStripeSimulator();
      env = { DATABASE_URL: testDb.url, SERVICE_MODE: 'production', ENCRYPTION_KEY: 'f'.repeat(64), ...providerEnv(google, stripe) };
      const lender = (await runAdmin(env, ['lender', 'create', '--name', 'Crash Test Lending'])) as { id: string };
      await runAdmin(env, ['lender', 'set', '--id', lender.id, '--rate-limit', '100000', '--burst', '10000']);
      lenderKey = ((await runAdmin(env, ['key', 'create', '--lender', lender.id, '--role', 'lender'])) as { api_key: string }).api_key;
      gdprKey = ((await runAdmin(env, ['key', 'create', '--lender', lender.id, '--role', 'gdpr_admin'])) as { api_key: string }).api_key;
    });
    after(async () => {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
      await google.close();
      await stripe.close();
      await testDb.drop();
    });

    let server: ChildProcess | undefined;
    const start = async () => {
      const started = await startServerProcess(env);
      server = started.child;
      children.push(server);
      return started.base;
    };
    const kill = async () => {
      server!.kill('SIGKILL');
      await once(server!, 'exit');
    };
    const call = (base: string, key: string, path: string, init: RequestInit = {}) =>
      fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers } });
    const access = async (base: string, reference: string) => call(base, gdprKey, `/api/v1/gdpr/access?obligor_id=${encodeURIComponent(reference)}`);
    const erase = (base: string, reference: string) =>
      call(base, gdprKey, '/api/v1/gdpr/erase', { method: 'POST', body: JSON.stringify({ obligor_id: reference }) });

    /** A creator with a completed verification from a Stripe account connected through the simulator. */
    const connectedCreator = async (base: string) => {
      const accountId = `acct_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
      const reference = `obligor-${randomUUID()}`;
      stripe.addAccount({
        accountId,
        email: `${accountId}@example.org`,
        transactions: lastMonths(24).map((m) => ({ amount: 50000, currency: 'eur', created: Date.parse(`${m}-15T12:00:00Z`) / 1000, type: 'charge' as const })),
      });
      const created = await call(base, lenderKey, '/api/v1/verifications', {
        method: 'POST',
        headers: { 'idempotency-key': randomUUID() },
        body: JSON.stringify({ obligor_reference: reference, creator_platforms: ['stripe'] }),
      });
      assert.equal(created.status, 201, await created.clone().text());
      const { verification_id: id, consent_url: consentUrl } = (await created.json()) as { verification_id: string; consent_url: string };
      const connect = await fetch(`${consentUrl}/connect/stripe`, { method: 'POST', redirect: 'manual' });
      assert.equal(connect.status, 303);
      const callback = await pressOnProviderPage(connect.headers.get('location')!, 'Connect', accountId);
      assert.equal((await fetch(callback, { redirect: 'manual', headers: { cookie: bindingCookieOf(connect.headers.getSetCookie()) } })).status, 303);
      assert.equal((await fetch(`${consentUrl}/complete`, { method: 'POST', redirect: 'manual' })).status, 303);
      for (let i = 0; i < 100; i++) {
        const status = ((await (await call(base, lenderKey, `/api/v1/verifications/${id}`)).json()) as { status: string }).status;
        if (status === 'completed') return { id, reference, accountId };
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error('the verification did not complete');
    };
    /** What is held for the creator, for comparing before and after a crash. */
    const held = async (base: string, reference: string) => {
      const response = await access(base, reference);
      assert.equal(response.status, 200, await response.clone().text());
      const report = (await response.json()) as {
        verifications: Array<{ income: unknown[]; tapes: unknown[]; platform_connections: unknown[]; webhook_events: unknown[] }>;
      };
      return report.verifications.map((v) => [v.income.length, v.tapes.length, v.platform_connections.length, v.webhook_events.length]);
    };

    it('killed while revoking the grants: everything is still there after the restart, and the erasure can be repeated', async () => {
      let base = await start();
      const creator = await connectedCreator(base);
      const before = await held(base, creator.reference);
      stripe.inject('slow', { slowMs: 5000, accountId: creator.accountId });
      const pending = erase(base, creator.reference).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 1000));
      await kill();
      await pending;
      base = await start();
      assert.deepEqual(await held(base, creator.reference), before, 'half-erased after the crash');
      const again = await erase(base, creator.reference);
      assert.equal(again.status, 200, await again.clone().text());
      assert.equal((await access(base, creator.reference)).status, 404);
      assert.ok(stripe.deauthorizations.some((d) => d.accountId === creator.accountId));
      await kill();
    });

    if (factory.name === 'sqlite') {
      it('killed at once after an erasure answered: no byte of the creator in the database file, its -wal or -shm; the restarted service works', async () => {
        let base = await start();
        const creator = await connectedCreator(base);
        // Each identifier as the service stores it (UTF-8 text, inside JSON bodies the same bytes for
        // these characters) and as UTF-16 in case any column were stored so.
        const traces = [creator.reference, creator.accountId, creator.id].flatMap((value) => [
          { value, bytes: Buffer.from(value, 'utf8') },
          { value: `${value} (UTF-16)`, bytes: Buffer.from(value, 'utf16le') },
          { value: `${value} (JSON)`, bytes: Buffer.from(JSON.stringify(value), 'utf8') },
        ]);
        const file = testDb.url.slice('sqlite:'.length);
        const files = [file, `${file}-wal`, `${file}-shm`];
        const present = () =>
          files.filter(existsSync).flatMap((name) => {
            const bytes = readFileSync(name);
            return traces.filter((trace) => bytes.includes(trace.bytes)).map((trace) => `${trace.value} in ${name.slice(file.length) || 'the database file'}`);
          });
        assert.ok(present().length > 0, 'the creator was never written to the files: the scan proves nothing');
        const erased = await erase(base, creator.reference);
        assert.equal(erased.status, 200, await erased.clone().text());
        await kill();
        assert.deepEqual(present(), [], 'the erased creator lingers in the files after the crash');
        base = await start();
        assert.equal((await access(base, creator.reference)).status, 404);
        const again = await connectedCreator(base);
        assert.equal((await access(base, again.reference)).status, 200);
        await kill();
      });
    }

    if (factory.name === 'postgres') {
      it('killed inside the erasure transaction: PostgreSQL rolls it all back', async () => {
        let base = await start();
        const creator = await connectedCreator(base);
        const before = await held(base, creator.reference);
        // Another session holds the audit table, so the erasure's transaction stops at its last
        // statement, after every delete; the process is killed there.
        const blocker = new pg.Client({ connectionString: testDb.url });
        await blocker.connect();
        await blocker.query('begin');
        await blocker.query('lock table gdpr_audit in access exclusive mode');
        const pending = erase(base, creator.reference).catch(() => undefined);
        let waiting = 0;
        for (let i = 0; i < 100 && waiting === 0; i++) {
          await new Promise((r) => setTimeout(r, 100));
          const { rows } = await blocker.query<{ n: string }>(
            "select count(*) as n from pg_stat_activity where wait_event_type = 'Lock' and query ilike '%gdpr_audit%' and pid <> pg_backend_pid()",
          );
          waiting = Number(rows[0]!.n);
        }
        assert.equal(waiting, 1, 'the erasure never reached its audit record');
        await kill();
        await pending;
        await blocker.query('rollback');
        await blocker.end();
        base = await start();
        assert.deepEqual(await held(base, creator.reference), before, 'half-erased after the crash');
        assert.equal((await erase(base, creator.reference)).status, 200);
        assert.equal((await access(base, creator.reference)).status, 404);
        await kill();
      });
    }
  });
}
