import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import type { Service } from '../src/service.ts';
import { ManualClock } from '../src/platform/clock.ts';
import { ACCESS_TOKEN_TTL_SECONDS, type GoogleSimulator } from './simulators/google.ts';
import type { StripeSimulator } from './simulators/stripe.ts';
import { connectAtProvider, lastMonths, startProviderService, type ProviderService } from './support/provider-service.ts';
import { testDatabases, type TestDatabase } from './support/test-databases.ts';

/**
 * Ongoing monitoring in production (P33), against the providers' real protocols: the grant asked
 * for, a refresh reading the providers again with it, a refused grant ending monitoring, and the
 * grants revoked at the providers when monitoring ends.
 */
for (const factory of testDatabases()) {
  describe(`ongoing monitoring against the provider simulators on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let started: ProviderService;
    let google: GoogleSimulator;
    let stripe: StripeSimulator;
    let service: Service;
    let key: string;
    // Google's clock, apart from the service's: advancing it expires the access tokens issued so far.
    let googleClock: ManualClock;
    const months = lastMonths(24);

    before(async () => {
      testDb = await factory.create();
      googleClock = new ManualClock(new Date());
      started = await startProviderService(testDb.url, { googleClock });
      ({ service, google, stripe, key } = started);
    });
    after(async () => {
      await started.close();
      await testDb.drop();
    });

    const api = (method: 'get' | 'post', path: string) => request(service.app)[method](`/api/v1${path}`).auth(key, { type: 'bearer' });
    const create = async (platforms: string[], monitoring?: { months: number }) => {
      const response = await api('post', '/verifications')
        .set('Idempotency-Key', randomUUID())
        .send({ obligor_reference: `obligor-${randomUUID()}`, creator_platforms: platforms, ...(monitoring ? { monitoring } : {}) });
      assert.equal(response.status, 201, response.text);
      return { id: response.body.verification_id as string, path: new URL(response.body.consent_url).pathname };
    };
    const connect = async (path: string, platform: 'youtube' | 'stripe', button: string, account: string) => {
      const { authorization, answer } = await connectAtProvider(service, path, platform, button, account);
      assert.equal(answer.status, 303, answer.text);
      return authorization;
    };
    /** A creator with income on both platforms, connected and consented; the verification completed. */
    const monitoredCreator = async () => {
      const email = `creator-${randomUUID()}@example.org`;
      const revenue: Record<string, number> = Object.fromEntries(months.map((m) => [m, 1000]));
      const channelId = `UC${randomUUID().slice(0, 8)}`;
      google.addAccount({ email, channelId, currency: 'EUR', monthlyRevenue: revenue });
      const accountId = `acct_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
      stripe.addAccount({
        accountId,
        email: `billing-${randomUUID()}@example.org`,
        transactions: months.map((m) => ({ amount: 50000, currency: 'eur', created: Date.parse(`${m}-15T12:00:00Z`) / 1000, type: 'charge' as const })),
      });
      const { id, path } = await create(['youtube', 'stripe'], { months: 6 });
      const authorization = await connect(path, 'youtube', 'Allow', email);
      await connect(path, 'stripe', 'Connect', accountId);
      assert.equal((await request(service.app).post(`${path}/complete`)).status, 303);
      await service.jobs.runDue();
      const completed = (await api('get', `/verifications/${id}`)).body;
      assert.equal(completed.status, 'completed', JSON.stringify(completed));
      assert.equal(completed.monitoring.state, 'active');
      return { id, email, channelId, accountId, revenue, authorization };
    };
    const refreshNow = async (id: string) => {
      assert.equal((await api('post', `/verifications/${id}/refresh`)).status, 202);
      await service.jobs.runDue();
      return (await api('get', `/verifications/${id}`)).body;
    };

    it('asks Google for offline access only when monitoring is asked for', async () => {
      const creator = await monitoredCreator();
      assert.equal(creator.authorization.searchParams.get('access_type'), 'offline');
      const [row] = await service.db.knex('platform_connections').where({ verification_id: creator.id, platform: 'youtube' });
      assert.ok(row.refresh_token_ciphertext, 'a monitored grant keeps a refresh token');
      const oneTime = await create(['youtube']);
      const start = await request(service.app).post(`${oneTime.path}/connect/youtube`);
      assert.equal(new URL(start.headers.location!).searchParams.get('access_type'), 'online');
    });

    it('a refresh a month later renews the expired access token from the grant, reads again and scores what the providers report now', async () => {
      const creator = await monitoredCreator();
      const [before_] = await service.db.knex('platform_connections').where({ verification_id: creator.id, platform: 'youtube' });
      // The access token of the consent is long dead by the first monthly refresh.
      googleClock.advance((ACCESS_TOKEN_TTL_SECONDS + 60) * 1000);
      const before = (await api('get', `/verifications/${creator.id}/tape`)).body;
      const reads = google.calls.filter((c) => c.path === '/v2/reports').length;
      // The creator's YouTube income doubles over the last three months.
      for (const month of months.slice(-3)) creator.revenue[month] = 2000;
      // The simulator keeps a copy of an account: the same account again replaces it.
      google.addAccount({ email: creator.email, channelId: creator.channelId, currency: 'EUR', monthlyRevenue: creator.revenue });
      const refreshed = await refreshNow(creator.id);
      assert.equal(refreshed.monitoring.refresh_requested_at, null);
      assert.ok(refreshed.monitoring.last_refresh_at);
      assert.ok(google.calls.filter((c) => c.path === '/v2/reports').length > reads, 'YouTube was read again');
      const after = (await api('get', `/verifications/${creator.id}/tape`)).body;
      const youtube = (tape: { cashflow_summary: { per_platform: Array<{ platform: string; revenue_3m_total_eur: number }> } }) =>
        tape.cashflow_summary.per_platform.find((p) => p.platform === 'youtube')!.revenue_3m_total_eur;
      assert.equal(youtube(before), 3000);
      assert.equal(youtube(after), 6000);
      const history = (await api('get', `/verifications/${creator.id}/tapes`)).body.data;
      assert.deepEqual(
        history.map((t: { reason: string }) => t.reason),
        ['refresh', 'completion'],
      );
      const [after_] = await service.db.knex('platform_connections').where({ verification_id: creator.id, platform: 'youtube' });
      assert.notEqual(after_.access_token_ciphertext, before_.access_token_ciphertext, 'the renewed access token is kept for the next read');
      assert.ok(after_.refresh_token_ciphertext);
    });

    it('a grant the creator revoked at the provider ends monitoring with grant_revoked; the tape stays', async () => {
      const creator = await monitoredCreator();
      google.inject('revoked', { email: creator.email });
      const ended = await refreshNow(creator.id);
      assert.equal(ended.monitoring.state, 'ended');
      assert.equal(ended.monitoring.end_reason, 'grant_revoked');
      assert.equal(ended.status, 'completed');
      assert.equal(ended.platform_connections.find((c: { platform: string }) => c.platform === 'youtube').status, 'revoked');
      assert.equal((await api('get', `/verifications/${creator.id}/tapes`)).body.data.length, 1);
    });

    it('stopping monitoring revokes the grants at both providers and forgets their tokens', async () => {
      const creator = await monitoredCreator();
      const stopped = await api('post', `/verifications/${creator.id}/monitoring/stop`);
      assert.equal(stopped.status, 200, stopped.text);
      assert.equal(stopped.body.monitoring.end_reason, 'stopped_by_lender');
      await service.jobs.runDue();
      assert.ok(
        google.revocations.some((r) => r.email === creator.email),
        'the Google grant was revoked',
      );
      assert.ok(
        stripe.calls.some((c) => c.path.includes('deauthorize') && JSON.stringify(c.body ?? {}).includes(creator.accountId)),
        'the Stripe account was deauthorized',
      );
      const rows = await service.db.knex('platform_connections').where({ verification_id: creator.id });
      assert.equal(rows.length, 2);
      for (const row of rows) {
        assert.equal(row.access_token_ciphertext, null, `${row.platform}'s token kept after monitoring ended`);
        assert.equal(row.refresh_token_ciphertext, null);
        assert.equal(row.status, 'revoked');
      }
      // Its tapes stay for the lender.
      assert.equal((await api('get', `/verifications/${creator.id}/tape`)).status, 200);
    });
  });
}
