import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { decryptSecret } from '../src/platform/crypto.ts';
import type { Service } from '../src/service.ts';
import type { GoogleSimulator } from './simulators/google.ts';
import type { StripeSimulator } from './simulators/stripe.ts';
import { bindingCookieOf, pressOnProviderPage } from './support/provider-page.ts';
import { connectAtProvider, lastMonths, PUBLIC_BASE_URL, startProviderService, type ProviderService } from './support/provider-service.ts';
import { testDatabases, type TestDatabase } from './support/test-databases.ts';

for (const factory of testDatabases()) {
  describe(`creator consent with the real provider protocols (simulators) on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let started: ProviderService;
    let google: GoogleSimulator;
    let stripe: StripeSimulator;
    let service: Service;
    let key: string;
    const months = lastMonths(24);

    before(async () => {
      testDb = await factory.create();
      started = await startProviderService(testDb.url, { env: { PROCESSING_WINDOW_SECONDS: '2' } });
      ({ service, google, stripe, key } = started);
    });
    after(async () => {
      await started.close();
      await testDb.drop();
    });

    const create = async (platforms: string[]) => {
      const response = await request(service.app)
        .post('/api/v1/verifications')
        .auth(key, { type: 'bearer' })
        .set('Idempotency-Key', randomUUID())
        .send({ obligor_reference: `obligor-${randomUUID()}`, creator_platforms: platforms });
      assert.equal(response.status, 201, response.text);
      return { id: response.body.verification_id as string, path: new URL(response.body.consent_url).pathname };
    };
    const status = async (id: string) => (await request(service.app).get(`/api/v1/verifications/${id}`).auth(key, { type: 'bearer' })).body;
    /** Connect button → provider page → the creator's choice → the service's callback. */
    const connect = async (path: string, platform: 'youtube' | 'stripe', button: string, account?: string) => {
      const { callback, answer } = await connectAtProvider(service, path, platform, button, account);
      assert.equal(callback.origin, PUBLIC_BASE_URL);
      return answer;
    };
    const completeAndCollect = async (id: string, path: string) => {
      assert.equal((await request(service.app).post(`${path}/complete`)).status, 303);
      assert.equal((await status(id)).status, 'processing');
      await service.jobs.runDue();
      return status(id);
    };

    it('connects YouTube (PKCE) and Stripe (read_only), collects the income and scores what the providers reported', async () => {
      const youtubeRevenue = Object.fromEntries(months.map((m, i) => [m, 1000 + 10 * i]));
      const email = `creator-${randomUUID()}@example.org`;
      google.addAccount({ email, channelId: `UC${randomUUID().slice(0, 8)}`, currency: 'EUR', monthlyRevenue: youtubeRevenue });
      const accountId = `acct_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
      // Per month: a charge, a payment and a refund in euro, a charge in US dollars, and a payout
      // (not income): 120 transactions, more than one page of Stripe's list (100).
      const transactions = months.flatMap((m, i) => {
        const created = Date.parse(`${m}-15T12:00:00Z`) / 1000;
        return [
          { amount: 30000 + 100 * i, currency: 'eur', created, type: 'charge' as const },
          { amount: 20000, currency: 'eur', created: created + 60, type: 'payment' as const },
          { amount: -5000, currency: 'eur', created: created + 120, type: 'refund' as const },
          { amount: 10800, currency: 'usd', created: created + 150, type: 'charge' as const },
          { amount: -40000, currency: 'eur', created: created + 180, type: 'payout' as const },
        ];
      });
      stripe.addAccount({ accountId, email: `billing-${randomUUID()}@example.org`, transactions });

      const { id, path } = await create(['youtube', 'stripe']);
      const start = await request(service.app).post(`${path}/connect/youtube`);
      const authorize = new URL(start.headers.location!);
      assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
      assert.match(authorize.searchParams.get('scope')!, /yt-analytics-monetary\.readonly/);
      // A one-off verification reads once, while the creator's access token lives: no lasting access.
      assert.equal(authorize.searchParams.get('access_type'), 'online');
      assert.ok(!authorize.toString().includes(id), 'the verification id reached the provider');
      assert.match(start.headers['content-security-policy'] ?? '', new RegExp(new URL(google.endpoints.authorize).origin.replace(/[.]/g, '\\.')));

      assert.equal((await connect(path, 'youtube', 'Allow', email)).status, 303);
      assert.equal((await connect(path, 'stripe', 'Connect', accountId)).status, 303);
      assert.equal((await request(service.app).post(`${path}/connect/youtube`)).status, 422, 'a second connection of one platform');
      const stored = await service.db.knex('platform_connections').where({ verification_id: id });
      for (const row of stored) {
        assert.ok(
          row.access_token_ciphertext && !row.access_token_ciphertext.includes('ya29') && !row.access_token_ciphertext.startsWith('sk_'),
          'a token is stored in the clear',
        );
      }
      // The account email is kept encrypted (P18): never in plain text, readable with the key.
      const youtubeRow = stored.find((r: { platform: string }) => r.platform === 'youtube');
      assert.equal(youtubeRow.account_email, null);
      assert.equal(youtubeRow.refresh_token_ciphertext, null, 'Google gave a refresh token to an online grant');
      assert.ok(!JSON.stringify(stored).includes(email), 'an email is stored in the clear');
      assert.equal(decryptSecret(service.encryptionKey, youtubeRow.account_email_ciphertext), email);

      const done = await completeAndCollect(id, path);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      const tape = (await request(service.app).get(`/api/v1/verifications/${id}/tape`).auth(key, { type: 'bearer' })).body;
      // Recomputed here from what the simulators hold: the last 12 complete months per platform.
      const last12 = months.slice(-12);
      const youtube12 = last12.reduce((sum, m) => sum + youtubeRevenue[m]!, 0);
      // USD 108.00 a month at the sandbox reference rate of 1.08 USD per euro (D17) is EUR 100.00.
      const stripe12 = last12.reduce((sum, m) => sum + (30000 + 100 * months.indexOf(m) + 20000 - 5000) / 100 + 100, 0);
      const byPlatform = Object.fromEntries(
        tape.cashflow_summary.per_platform.map((p: { platform: string; revenue_12m_total_eur: number }) => [p.platform, p.revenue_12m_total_eur]),
      );
      assert.equal(byPlatform.youtube, youtube12);
      assert.equal(byPlatform.stripe, stripe12);
      assert.equal(tape.cashflow_summary.revenue_12m_total_eur, Math.round((youtube12 + stripe12) * 100) / 100);
      assert.ok(google.calls.some((c) => c.path === '/v2/reports'));
      const pages = stripe.calls.filter((c) => c.path === '/v1/balance_transactions' && c.headers['stripe-account'] === accountId);
      assert.ok(pages.length >= 2 && pages.some((c) => c.query.starting_after), 'the list was not paginated');

      // A tape stored before its scoring input was kept is scored again from the income rows when an
      // overlay arrives: every figure, and when each platform was connected, stay as they were.
      await service.db.knex('tapes').where({ verification_id: id }).update({ scoring_input: null });
      const overlay = await request(service.app)
        .post(`/api/v1/verifications/${id}/overlays`)
        .auth(key, { type: 'bearer' })
        .send({ type: 'aml', provider: 'ComplyCheck', status: 'clear', observed_at: '2026-11-01T00:00:00Z' });
      assert.equal(overlay.status, 201, overlay.text);
      const rescored = (await request(service.app).get(`/api/v1/verifications/${id}/tape`).auth(key, { type: 'bearer' })).body;
      assert.ok(
        tape.platform_connections.every((c: { connected_at: string | null }) => c.connected_at),
        'the first tape knows when each platform was connected',
      );
      assert.deepEqual(rescored.platform_connections, tape.platform_connections);
      assert.deepEqual(rescored.cashflow_summary, tape.cashflow_summary);
      assert.equal(rescored.tape_generated_at, tape.tape_generated_at);
    });

    it('fails with platform_error when a provider keeps answering 5xx (bounded retries)', async () => {
      const email = `flaky-${randomUUID()}@example.org`;
      google.addAccount({ email, channelId: 'UCflaky', currency: 'EUR', monthlyRevenue: { [months[23]!]: 100 } });
      const { id, path } = await create(['youtube']);
      assert.equal((await connect(path, 'youtube', 'Allow', email)).status, 303);
      google.inject('server_error', { times: 10, email });
      const reportsBefore = google.calls.filter((c) => c.path === '/v2/reports').length;
      const done = await completeAndCollect(id, path);
      assert.deepEqual([done.status, done.failure_reason], ['failed', 'platform_error']);
      assert.equal(google.calls.filter((c) => c.path === '/v2/reports').length - reportsBefore, 3, 'retries are bounded at three attempts');
    });

    it('fails with consent_revoked when the creator revoked access before the fetch', async () => {
      const accountId = `acct_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
      stripe.addAccount({ accountId, email: 'revoker@example.org', transactions: [] });
      const { id, path } = await create(['stripe']);
      assert.equal((await connect(path, 'stripe', 'Connect', accountId)).status, 303);
      stripe.inject('revoked', { accountId });
      const done = await completeAndCollect(id, path);
      assert.deepEqual([done.status, done.failure_reason, done.platform_connections[0].status], ['failed', 'consent_revoked', 'revoked']);
    });

    it('fails with timeout when a provider answers only after the processing window (D18)', async () => {
      const email = `slow-${randomUUID()}@example.org`;
      google.addAccount({ email, channelId: 'UCslow', currency: 'EUR', monthlyRevenue: { [months[23]!]: 100 } });
      const { id, path } = await create(['youtube']);
      assert.equal((await connect(path, 'youtube', 'Allow', email)).status, 303);
      google.inject('slow', { slowMs: 2500, email });
      const done = await completeAndCollect(id, path);
      assert.deepEqual([done.status, done.failure_reason], ['failed', 'timeout']);
    });

    it('stores nothing and hands the grant back when the lender cancels while the code is being exchanged', async () => {
      const email = `creator-${randomUUID()}@example.org`;
      google.addAccount({ email, channelId: `UC${randomUUID().slice(0, 8)}`, currency: 'EUR', monthlyRevenue: {} });
      const { id, path } = await create(['youtube']);
      const start = await request(service.app).post(`${path}/connect/youtube`);
      const callback = await pressOnProviderPage(start.headers.location!, 'Allow', email);
      // The link is open when the callback arrives; the lender cancels while Google answers the code.
      google.inject('slow_token', { email, slowMs: 500 });
      const back = request(service.app).get(`${callback.pathname}${callback.search}`).set('Cookie', bindingCookieOf(start.headers['set-cookie']));
      const backAnswer = back.then((r) => r);
      await new Promise((r) => setTimeout(r, 200));
      const cancelled = await request(service.app).post(`/api/v1/verifications/${id}/cancel`).auth(key, { type: 'bearer' });
      assert.equal(cancelled.status, 200, cancelled.text);
      assert.equal((await backAnswer).status, 409);

      const after = await status(id);
      assert.equal(after.status, 'cancelled');
      assert.equal(after.platform_connections[0].status, 'not_connected');
      const [row] = await service.db.knex('platform_connections').where({ verification_id: id, platform: 'youtube' });
      assert.equal(row?.access_token_ciphertext ?? null, null, 'tokens stored for a cancelled verification');
      // An online grant has no refresh token: its access token is what ends the grant.
      assert.deepEqual(
        google.revocations.filter((r) => r.email === email).map((r) => r.tokenType),
        ['access_token'],
        'the grant was left open at Google',
      );
    });

    // RFC 9700, 4.7: the state alone let an applicant have someone else's account connected to their
    // own link by handing over the authorization URL. The round trip is bound to the browser that began it.
    for (const [platform, name, button] of [
      ['youtube', 'YouTube', 'Allow'],
      ['stripe', 'Stripe', 'Connect'],
    ] as const) {
      it(`connects nothing when the ${name} round trip comes back without the binding cookie of the browser that began it, or with another`, async () => {
        const account = platform === 'youtube' ? `victim-${randomUUID()}@example.org` : `acct_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
        if (platform === 'youtube') google.addAccount({ email: account, channelId: `UC${randomUUID().slice(0, 8)}`, currency: 'EUR', monthlyRevenue: {} });
        else stripe.addAccount({ accountId: account, email: `billing-${randomUUID()}@example.org`, transactions: [] });
        const { id, path } = await create([platform]);
        const start = await request(service.app).post(`${path}/connect/${platform}`);
        const binding = bindingCookieOf(start.headers['set-cookie']);
        const set = [start.headers['set-cookie'] ?? []].flat().find((c) => c.startsWith('__Host-consent_oauth_'))!;
        // On HTTPS, __Host-: only this host may set it, secure, on path / (no sibling subdomain plants a nonce).
        assert.match(set, /; Path=\/;/);
        assert.match(set, /; Secure/);
        assert.match(set, /HttpOnly/);
        assert.match(set, /SameSite=Lax/);
        const expires = Date.parse(/Expires=([^;]+)/.exec(set)![1]!);
        assert.ok(expires > Date.now() && expires <= Date.now() + 15 * 60 * 1000 + 1000, `short-lived: ${set}`);

        // Another browser: no cookie at all, then one that began a round trip of its own.
        const callback = await pressOnProviderPage(start.headers.location!, button, account);
        const elsewhere = await request(service.app).get(`${callback.pathname}${callback.search}`).set('Accept-Language', 'de');
        assert.equal(elsewhere.status, 403);
        assert.match(elsewhere.text, /Zu Ihrer Sicherheit wurde nichts verbunden/);
        assert.ok(!elsewhere.text.includes(path), 'the refusal shows the consent link to whoever holds the other browser');
        assert.equal((await status(id)).platform_connections[0].status, 'not_connected');
        // The state was spent by that callback: the right browser cannot finish it later either.
        const late = await request(service.app).get(`${callback.pathname}${callback.search}`).set('Cookie', binding);
        assert.equal(late.status, 409);
        assert.equal((await status(id)).platform_connections[0].status, 'not_connected');

        const own = await request(service.app).post(`${path}/connect/${platform}`);
        const other = await request(service.app).post(`${path}/connect/${platform}`);
        const ownCallback = await pressOnProviderPage(own.headers.location!, button, account);
        const swapped = await request(service.app)
          .get(`${ownCallback.pathname}${ownCallback.search}`)
          .set('Cookie', bindingCookieOf(other.headers['set-cookie']));
        assert.equal(swapped.status, 403);
        assert.match(swapped.text, /nothing was connected/);
        assert.equal((await status(id)).platform_connections[0].status, 'not_connected');
        // Two round trips begun in one browser (two tabs) each keep their own cookie: the earlier one still finishes.
        const firstTab = await request(service.app).post(`${path}/connect/${platform}`);
        const secondTab = await request(service.app).post(`${path}/connect/${platform}`);
        const bothCookies = [bindingCookieOf(firstTab.headers['set-cookie']), bindingCookieOf(secondTab.headers['set-cookie'])].join('; ');
        const firstCallback = await pressOnProviderPage(firstTab.headers.location!, button, account);
        const finished = await request(service.app).get(`${firstCallback.pathname}${firstCallback.search}`).set('Cookie', bothCookies);
        assert.equal(finished.status, 303, "the earlier tab's round trip was ended by the later one");

        assert.equal((await status(id)).platform_connections[0].status, 'connected');
      });
    }

    for (const [platform, name] of [
      ['youtube', 'YouTube'],
      ['stripe', 'Stripe'],
    ] as const) {
      it(`keeps ${name} unconnected when the creator denies it on the provider page, says so, and offers to try again or decline`, async () => {
        const { id, path } = await create([platform]);
        const back = await connect(path, platform, 'Deny');
        assert.equal(back.status, 303);
        assert.equal(back.headers.location, `${path}/denied/${platform}`);
        assert.equal((await status(id)).platform_connections[0].status, 'not_connected');
        const page = await request(service.app).get(back.headers.location);
        assert.equal(page.status, 200);
        assert.match(page.text, new RegExp(`<h1>You did not give access to ${name}</h1>`));
        assert.ok(page.text.includes(`<form method="post" action="${path}/connect/${platform}">`), 'try again');
        assert.ok(page.text.includes(`<a href="${path}/decline">`), 'decline');
        assert.equal((await status(id)).status, 'pending_consent');
        const replayed = await request(service.app).get(`/consent/oauth/${platform}/callback?state=forged&code=x`);
        assert.equal(replayed.status, 409);
        assert.doesNotMatch(replayed.text, /href="\/consent\/"/, 'no link to a page that does not exist');
      });
    }
  });
}
