import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { runAdmin } from '../src/admin/run-admin.ts';
import { configuredProviders } from '../src/consent/providers.ts';
import { loadConfig } from '../src/platform/config.ts';
import { listOperations, loadApiDocument } from '../src/platform/http/api-document.ts';
import { countVerificationMove, FINAL_STATUSES, processRegistry } from '../src/platform/metrics/metrics.ts';
import { TRANSITIONS, VERIFICATION_STATES, type VerificationStatus } from '../src/verifications/state-machine.ts';
import { startGoogleSimulator, type GoogleSimulator } from './simulators/google.ts';
import { providerEnv } from './simulators/provider-env.ts';
import { startStripeSimulator, type StripeSimulator } from './simulators/stripe.ts';
import { freePort } from './support/free-port.ts';
import { startServerProcess } from './support/server-process.ts';
import { testDatabases, type TestDatabase } from './support/test-databases.ts';
import { makeTestCertificates, TestReceiver } from './support/test-receiver.ts';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Prometheus's text format, as far as these tests read it: one sample per line, comments skipped. */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(match, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[name!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The sum of the samples of `name` whose labels include `labels`. */
function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0);
}

function has(samples: Sample[], name: string, labels: Record<string, string> = {}): boolean {
  return samples.some((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

const OPERATION_IDS = listOperations(loadApiDocument()).map((operation) => operation.operationId as string);

/**
 * Every label the service's own series may carry, with the values it may take: closed sets, so an
 * id, a key or a reference can never become a label value (and a series per value).
 */
const ALLOWED_LABELS: Record<string, (value: string) => boolean> = {
  operation: (v) => [...OPERATION_IDS, 'consent_pages', 'documents', 'unmatched'].includes(v),
  status: (v) => /^[1-5][0-9]{2}$/.test(v) || ['pending_consent', 'processing', 'completed', 'failed', 'expired', 'cancelled'].includes(v),
  reason: (v) => ['none', 'platform_error', 'consent_revoked', 'timeout', 'consent_declined'].includes(v),
  scope: (v) => ['key', 'address'].includes(v),
  product_type: (v) => /^[a-z_]{2,32}$/.test(v),
  outcome: (v) => ['delivered', 'retrying', 'failed', 'done', 'ok', 'revoked', 'transient', 'permanent', 'error', 'grant_revoked'].includes(v),
  kind: (v) => /^(verification|consent)\.[a-z_]+$/.test(v) || ['unavailable', 'constraint', 'other'].includes(v),
  phase: (v) => ['first_attempt', 'retry'].includes(v),
  state: (v) => ['used', 'free', 'pending', 'max', 'active', 'failing'].includes(v),
  provider: (v) => ['google', 'stripe'].includes(v),
  call: (v) => ['exchange', 'income', 'revoke'].includes(v),
  le: (v) => /^(\+Inf|[0-9.e+-]+)$/.test(v),
};

const METRICS_TOKEN = 'metrics-test-token-0123456789';

for (const factory of testDatabases()) {
  describe(`Prometheus metrics on ${factory.name}`, function () {
    this.timeout(120_000);
    let testDb: TestDatabase;
    let receiver: TestReceiver;
    let receiverUrl: string;
    let server: { child: ChildProcess; base: string };
    let metricsBase: string;
    let lender: { id: string };
    let key: { id: string; api_key: string };
    let limitedKey: { id: string; api_key: string };

    before(async () => {
      testDb = await factory.create();
      const certificates = makeTestCertificates();
      receiver = new TestReceiver(certificates);
      receiverUrl = await receiver.listen();
      const admin = { DATABASE_URL: testDb.url };
      lender = await runAdmin(admin, ['lender', 'create', '--name', 'Metrics Lender']);
      key = await runAdmin(admin, ['key', 'create', '--lender', lender.id, '--role', 'lender']);
      limitedKey = await runAdmin(admin, ['key', 'create', '--lender', lender.id, '--role', 'lender']);
      await runAdmin(admin, ['key', 'limit', '--key-id', limitedKey.id, '--rate-limit', '3', '--burst', '3']);
      const metricsPort = await freePort();
      metricsBase = `http://127.0.0.1:${metricsPort}`;
      server = await startServerProcess({
        DATABASE_URL: testDb.url,
        METRICS_PORT: String(metricsPort),
        METRICS_TOKEN,
        SANDBOX_COMPLETE_DELAY_MS: '300',
        WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
        // One quick retry, then an hour: a receiver that keeps failing leaves a delivery in the retry backlog.
        WEBHOOK_RETRY_SCHEDULE: '0,1,3600',
        NODE_EXTRA_CA_CERTS: certificates.caFile,
      });
    });
    after(async () => {
      if (server?.child.exitCode === null) {
        server.child.kill('SIGTERM');
        await once(server.child, 'exit');
      }
      await receiver?.close();
      await testDb?.drop();
    });

    const api = (path: string, init: { method?: string; body?: object; apiKey?: string | null } = {}) =>
      fetch(`${server.base}${path}`, {
        method: init.method ?? 'GET',
        headers: {
          ...(init.apiKey === null ? {} : { authorization: `Bearer ${init.apiKey ?? key.api_key}` }),
          ...(init.body ? { 'content-type': 'application/json', 'idempotency-key': randomUUID() } : {}),
        },
        ...(init.body ? { body: JSON.stringify(init.body) } : {}),
      });
    const scrape = async (): Promise<{ text: string; samples: Sample[] }> => {
      const response = await fetch(`${metricsBase}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      const text = await response.text();
      return { text, samples: parseExposition(text) };
    };
    const waitFor = async (what: string, condition: () => Promise<boolean> | boolean) => {
      const deadline = Date.now() + 30_000;
      while (!(await condition())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };

    it('serves metrics only on the metrics port, only with the token', async () => {
      assert.equal((await fetch(`${metricsBase}/metrics`)).status, 401);
      assert.equal((await fetch(`${metricsBase}/metrics`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status, 401);
      assert.equal((await fetch(`${metricsBase}/other`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).status, 404);
      // The public port keeps only the contract's routes.
      const onApi = await fetch(`${server.base}/metrics`);
      assert.equal(onApi.status, 404);
      assert.equal(((await onApi.json()) as { error: string }).error, 'not_found');
    });

    it('counts a representative run with plausible values and no identifying label', async () => {
      const delivered = `/delivered-${randomUUID()}`;
      const failing = `/failing-${randomUUID()}`;
      receiver.answerWith(delivered, 503); // one retry, then acknowledged
      receiver.answerWith(failing, ...Array<number>(50).fill(500));
      const webhookIds: string[] = [];
      for (const path of [delivered, failing]) {
        const registered = await api('/api/v1/webhooks', {
          method: 'POST',
          body: { url: `${receiverUrl}${path}`, events: ['verification.completed', 'verification.failed', 'verification.expired'] },
        });
        const body = await registered.text();
        assert.equal(registered.status, 201, body);
        webhookIds.push((JSON.parse(body) as { webhook_id: string }).webhook_id);
      }

      const references = [
        'demo_prime_multi',
        `test-complete-${randomUUID()}`,
        `test-fail-${randomUUID()}`,
        `test-revoke-${randomUUID()}`,
        `test-timeout-${randomUUID()}`,
        `test-expire-${randomUUID()}`,
        `ordinary-obligor-${randomUUID()}`,
        `cancelled-obligor-${randomUUID()}`,
      ];
      const verificationIds: string[] = [];
      for (const reference of references) {
        const created = await api('/api/v1/verifications', { method: 'POST', body: { obligor_reference: reference, creator_platforms: ['youtube'] } });
        const body = await created.text();
        assert.equal(created.status, 201, body);
        verificationIds.push((JSON.parse(body) as { verification_id: string }).verification_id);
      }
      // The lender withdraws the last one: cancelled is a final status too.
      const cancelled = await api(`/api/v1/verifications/${verificationIds.at(-1)}/cancel`, { method: 'POST' });
      assert.equal(cancelled.status, 200, await cancelled.text());

      // Errors: no key, an unknown verification, a body the spec refuses, a path that does not exist.
      assert.equal((await api(`/api/v1/verifications/${verificationIds[0]}`, { apiKey: null })).status, 401);
      assert.equal((await api('/api/v1/verifications/vrf_doesnotexist')).status, 404);
      assert.equal((await api('/api/v1/verifications', { method: 'POST', body: { obligor_reference: '' } })).status, 400);
      assert.equal((await api('/api/v1/no-such-thing')).status, 404);
      // A trailing slash is no operation's path, though the validator's own patterns take it.
      assert.equal((await api('/healthz/', { apiKey: null })).status, 404);
      // The limited key's fourth request in its minute is refused.
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await api(`/api/v1/verifications/${verificationIds[0]}`, { apiKey: limitedKey.api_key })).status);
      assert.deepEqual(statuses, [200, 200, 200, 429, 429]);

      // Six sandbox verifications reach a final status and the cancelled one is final at once (the
      // ordinary one waits for its creator); the events of the six reach both endpoints, the first
      // after one retry, the second never.
      await waitFor('every sandbox verification to finish', async () => {
        const { samples } = await scrape();
        return total(samples, 'civ_verifications_finished_total') >= 7;
      });
      // Counted once the sender has the receiver's answer, which is after the receiver records the request.
      await waitFor('deliveries to both endpoints', async () => {
        const { samples } = await scrape();
        return (
          total(samples, 'civ_webhook_attempt_duration_seconds_count', { outcome: 'delivered' }) >= 6 &&
          total(samples, 'civ_webhook_backlog', { phase: 'first_attempt' }) === 0 &&
          total(samples, 'civ_webhook_backlog', { phase: 'retry' }) === 6
        );
      });

      const { text, samples } = await scrape();
      const count = (labels: Record<string, string>) => total(samples, 'civ_http_request_duration_seconds_count', labels);
      assert.equal(count({ operation: 'createVerification', status: '201' }), 8);
      assert.equal(count({ operation: 'cancelVerification', status: '200' }), 1);
      assert.equal(count({ operation: 'createVerification', status: '400' }), 1);
      assert.equal(count({ operation: 'createWebhook', status: '201' }), 2);
      assert.equal(count({ operation: 'getVerification', status: '401' }), 1);
      assert.equal(count({ operation: 'getVerification', status: '404' }), 1);
      assert.equal(count({ operation: 'getVerification', status: '429' }), 2);
      // /api/v1/no-such-thing, /healthz/, and /metrics asked of the API port by the test before.
      assert.equal(count({ operation: 'unmatched', status: '404' }), 3);
      assert.equal(count({ operation: 'getHealth', status: '404' }), 0);
      assert.ok(count({ operation: 'getReadiness', status: '200' }) >= 1, 'the start-up probe');
      const seconds = total(samples, 'civ_http_request_duration_seconds_sum', { operation: 'createVerification', status: '201' });
      assert.ok(seconds > 0 && seconds / 8 < 5, `mean create latency ${seconds / 8} s`);
      // Histogram buckets are cumulative and end with every request.
      assert.equal(total(samples, 'civ_http_request_duration_seconds_bucket', { operation: 'createVerification', status: '201', le: '+Inf' }), 8);

      assert.equal(total(samples, 'civ_rate_limit_refusals_total', { scope: 'key' }), 2);
      assert.equal(total(samples, 'civ_verifications_created_total'), 8);
      assert.equal(total(samples, 'civ_verifications_created_total', { status: 'completed' }), 1);
      assert.equal(total(samples, 'civ_verifications_created_total', { status: 'pending_consent' }), 7);
      assert.equal(total(samples, 'civ_verifications_finished_total', { status: 'completed', reason: 'none' }), 2);
      assert.equal(total(samples, 'civ_verifications_finished_total', { status: 'failed', reason: 'platform_error' }), 1);
      assert.equal(total(samples, 'civ_verifications_finished_total', { status: 'failed', reason: 'consent_revoked' }), 1);
      assert.equal(total(samples, 'civ_verifications_finished_total', { status: 'failed', reason: 'timeout' }), 1);
      assert.equal(total(samples, 'civ_verifications_finished_total', { status: 'expired', reason: 'none' }), 1);
      assert.equal(total(samples, 'civ_verifications_finished_total', { status: 'cancelled', reason: 'none' }), 1);
      assert.equal(total(samples, 'civ_verifications_finished_total'), 7);
      assert.equal(total(samples, 'civ_tape_scoring_duration_seconds_count'), 2);

      // Six events to each endpoint: six delivered (one after a retry), six waiting for their third attempt.
      assert.equal(total(samples, 'civ_webhook_attempt_duration_seconds_count', { outcome: 'delivered' }), 6);
      assert.ok(total(samples, 'civ_webhook_attempt_duration_seconds_count', { outcome: 'retrying' }) >= 7);
      assert.equal(total(samples, 'civ_webhook_backlog', { phase: 'retry' }), 6);
      assert.equal(total(samples, 'civ_webhook_backlog', { phase: 'first_attempt' }), 0);
      const oldestAge = total(samples, 'civ_webhook_oldest_pending_age_seconds');
      assert.ok(oldestAge > 0 && oldestAge < 120, `oldest pending delivery ${oldestAge} s`);
      assert.ok(has(samples, 'civ_webhook_oldest_due_lag_seconds'));

      // The ordinary verification waits for its creator: its consent expiry is queued, not late.
      assert.ok(total(samples, 'civ_jobs_queued', { kind: 'verification.expire_consent' }) >= 1);
      assert.equal(total(samples, 'civ_jobs_lag_seconds', { kind: 'verification.expire_consent' }), 0);
      assert.ok(total(samples, 'civ_jobs_run_total', { kind: 'verification.sandbox_step', outcome: 'done' }) >= 6);
      assert.equal(total(samples, 'civ_db_reachable'), 1);
      assert.ok(total(samples, 'civ_db_pool_connections', { state: 'max' }) >= 1);
      assert.ok(has(samples, 'civ_db_pool_connections', { state: 'used' }));
      assert.ok(total(samples, 'process_cpu_seconds_total') > 0);
      assert.ok(has(samples, 'nodejs_eventloop_lag_p99_seconds'));
      assert.ok(total(samples, 'process_resident_memory_bytes') > 0);

      // Nothing that names a lender, a key, a verification, an endpoint, a delivery, an event or an
      // obligor appears anywhere in the scrape, and every label of our series is from a closed set.
      const deliveryIds = receiver.received.map((r) => r.headers['x-service-delivery']!);
      const eventIds = receiver.received.map((r) => (JSON.parse(r.rawBody.toString()) as { event_id: string }).event_id);
      const forbidden = [
        lender.id,
        key.id,
        limitedKey.id,
        key.api_key,
        key.api_key.slice(0, 16),
        'Metrics Lender',
        ...webhookIds,
        ...verificationIds,
        ...references,
        ...deliveryIds,
        ...eventIds,
        delivered,
        failing,
        METRICS_TOKEN,
      ];
      for (const value of forbidden) assert.ok(!text.includes(value), `the scrape contains ${value}`);
      for (const sample of samples.filter((s) => s.name.startsWith('civ_'))) {
        for (const [label, value] of Object.entries(sample.labels)) {
          const allowed = ALLOWED_LABELS[label];
          assert.ok(allowed, `unexpected label ${label} on ${sample.name}`);
          assert.ok(allowed(value), `${sample.name}{${label}="${value}"} is not from the label's closed set`);
        }
      }
    });
  });
}

describe('verification moves', () => {
  const finished = async (status: string, reason: string) =>
    total(parseExposition(await processRegistry.getSingleMetricAsString('civ_verifications_finished_total')), 'civ_verifications_finished_total', {
      status,
      reason,
    });

  it('counts as finished exactly the final states of the state table, cancelled among them', async () => {
    // The states no move of the state table leaves.
    const terminal: readonly VerificationStatus[] = VERIFICATION_STATES.filter((state) => !TRANSITIONS.some((transition) => transition.from === state));
    assert.deepEqual([...FINAL_STATUSES].sort(), [...terminal].sort());
    for (const transition of TRANSITIONS.filter((t) => terminal.includes(t.to))) {
      for (const reason of transition.reasons ?? [null]) {
        const before = await finished(transition.to, reason ?? 'none');
        countVerificationMove(transition.from, transition.to, reason);
        assert.equal(await finished(transition.to, reason ?? 'none'), before + 1, `${transition.from ?? 'new'} -> ${transition.to} (${reason ?? 'none'})`);
      }
    }
  });
});

describe('provider call metrics', function () {
  this.timeout(30_000);
  let google: GoogleSimulator;
  let stripe: StripeSimulator;

  before(async () => {
    google = await startGoogleSimulator();
    stripe = await startStripeSimulator();
  });
  after(async () => {
    await google.close();
    await stripe.close();
  });

  const calls = async (labels: Record<string, string>) =>
    total(
      parseExposition(await processRegistry.getSingleMetricAsString('civ_provider_call_duration_seconds')),
      'civ_provider_call_duration_seconds_count',
      labels,
    );

  it('times each call to a provider by provider, call and outcome, naming no account', async () => {
    const providers = configuredProviders(loadConfig(providerEnv(google, stripe)).providers);
    const accountId = `acct_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    stripe.addAccount({
      accountId,
      email: 'metrics@example.org',
      connected: true,
      transactions: [{ amount: 5000, currency: 'eur', created: 1748736000, type: 'charge' }],
    });
    const window = { from: new Date('2025-01-01T00:00:00Z'), to: new Date('2026-01-01T00:00:00Z') };
    const account = { accessToken: 'unused', externalAccountId: accountId };
    const before = {
      ok: await calls({ provider: 'stripe', call: 'income', outcome: 'ok' }),
      transient: await calls({ provider: 'stripe', call: 'income', outcome: 'transient' }),
      revoked: await calls({ provider: 'stripe', call: 'income', outcome: 'revoked' }),
    };
    assert.equal((await providers.stripe!.monthlyIncome(account, window)).length, 1);
    stripe.inject('server_error', { times: 5, accountId });
    await assert.rejects(providers.stripe!.monthlyIncome(account, window));
    stripe.inject('revoked', { accountId });
    await assert.rejects(providers.stripe!.monthlyIncome(account, window));
    assert.equal(await calls({ provider: 'stripe', call: 'income', outcome: 'ok' }), before.ok + 1);
    assert.equal(await calls({ provider: 'stripe', call: 'income', outcome: 'transient' }), before.transient + 1);
    assert.equal(await calls({ provider: 'stripe', call: 'income', outcome: 'revoked' }), before.revoked + 1);
    assert.ok(!(await processRegistry.metrics()).includes(accountId));
  });
});
