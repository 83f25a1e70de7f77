import assert from 'node:assert/strict';
import { configuredProviders, type ConnectedAccount, type PlatformProvider, type ProviderSettings } from '../src/consent/providers.ts';
import { loadConfig } from '../src/platform/config.ts';
import { startGoogleSimulator, type GoogleSimulator } from './simulators/google.ts';
import { providerEnv } from './simulators/provider-env.ts';
import { startStripeSimulator, type StripeSimulator } from './simulators/stripe.ts';
import { freePort } from './support/free-port.ts';
import { connectThrough, rejectsWithProviderError as rejectsWith } from './support/provider-grant.ts';

const WINDOW = { from: new Date('2025-01-01T00:00:00Z'), to: new Date('2026-01-01T00:00:00Z') };

describe('provider grant revocation against the simulators', function () {
  let google: GoogleSimulator;
  let stripe: StripeSimulator;
  let settings: ProviderSettings;
  let youtube: PlatformProvider;
  let stripeProvider: PlatformProvider;

  beforeEach(async () => {
    google = await startGoogleSimulator();
    stripe = await startStripeSimulator();
    settings = loadConfig(providerEnv(google, stripe)).providers;
    const providers = configuredProviders(settings);
    youtube = providers.youtube!;
    stripeProvider = providers.stripe!;
  });
  afterEach(async () => {
    await google.close();
    await stripe.close();
  });

  describe('Google (RFC 7009 token revocation)', () => {
    const email = 'revoke-me@example.org';
    let grant: ConnectedAccount;

    beforeEach(async () => {
      google.addAccount({ email, channelId: 'UCrevokeAAAAAAAAAAAAAAAA', currency: 'EUR', monthlyRevenue: { '2025-06': 10 } });
      // A monitored verification's grant: offline, so the refresh token is what revocation presents.
      grant = await connectThrough(youtube, 'Allow', email, { offline: true });
      assert.ok(grant.refreshToken, 'offline access asked for, so a refresh token');
    });

    it('revokes the grant through its refresh token, after which its access token no longer reads income', async () => {
      assert.equal((await youtube.monthlyIncome(grant, WINDOW)).length, 1);
      await youtube.revoke(grant);
      assert.deepEqual(google.revocations, [{ email, tokenType: 'refresh_token', token: grant.refreshToken }]);
      const request = google.calls.find((c) => c.path === '/revoke');
      assert.equal(request?.method, 'POST');
      assert.equal(request?.body.token, grant.refreshToken);
      await rejectsWith(youtube.monthlyIncome(grant, WINDOW), 'revoked');
    });

    it('is idempotent: revoking a grant already gone succeeds', async () => {
      await youtube.revoke(grant);
      await youtube.revoke(grant);
      assert.equal(google.calls.filter((c) => c.path === '/revoke').length, 2);
      assert.equal(google.revocations.length, 1);
    });

    it('succeeds when the creator already removed the app at Google', async () => {
      google.inject('revoked', { email });
      await youtube.revoke(grant);
      assert.deepEqual(google.revocations, []);
    });

    it('revokes through the access token when Google issued no refresh token', async () => {
      await youtube.revoke({ ...grant, refreshToken: null });
      assert.deepEqual(google.revocations, [{ email, tokenType: 'access_token', token: grant.accessToken }]);
    });

    it('reports an injected 503 as transient, and a retry then revokes', async () => {
      google.inject('server_error', { email });
      await rejectsWith(youtube.revoke(grant), 'transient', /HTTP 503/);
      assert.deepEqual(google.revocations, []);
      await youtube.revoke(grant);
      assert.equal(google.revocations.length, 1);
    });

    it('reports an unreachable revocation endpoint as transient', async () => {
      const unreachable = `http://127.0.0.1:${await freePort()}/revoke`;
      const provider = configuredProviders({ ...settings, google: { ...settings.google!, revokeUrl: unreachable } }).youtube!;
      await rejectsWith(provider.revoke(grant), 'transient');
    });

    it('reports a refusal that is no OAuth error (a 404 page) as permanent', async () => {
      const provider = configuredProviders({ ...settings, google: { ...settings.google!, revokeUrl: `${google.baseUrl}/no-such-endpoint` } }).youtube!;
      await rejectsWith(provider.revoke(grant), 'permanent', /HTTP 404/);
    });
  });

  describe('Stripe (Connect deauthorize)', () => {
    const accountId = 'acct_revokeme0000001';
    let grant: ConnectedAccount;

    beforeEach(async () => {
      stripe.addAccount({ accountId, email: 'revoke-me@example.org', transactions: [{ amount: 5000, currency: 'eur', created: 1748736000, type: 'charge' }] });
      grant = await connectThrough(stripeProvider, 'Connect', accountId, { offline: false });
      assert.equal(grant.externalAccountId, accountId);
    });

    it('deauthorizes the account with the platform key, after which the platform no longer reads it', async () => {
      assert.equal((await stripeProvider.monthlyIncome(grant, WINDOW)).length, 1);
      await stripeProvider.revoke(grant);
      assert.deepEqual(stripe.deauthorizations, [{ accountId, clientId: stripe.clientId }]);
      const request = stripe.calls.find((c) => c.path === '/oauth/deauthorize');
      assert.equal(request?.headers.authorization, `Bearer ${stripe.secretKey}`);
      assert.deepEqual(request?.body, { client_id: stripe.clientId, stripe_user_id: accountId });
      await rejectsWith(stripeProvider.monthlyIncome(grant, WINDOW), 'revoked');
    });

    it('is idempotent: deauthorizing an account no longer connected succeeds', async () => {
      await stripeProvider.revoke(grant);
      await stripeProvider.revoke(grant);
      assert.equal(stripe.calls.filter((c) => c.path === '/oauth/deauthorize').length, 2);
      assert.equal(stripe.deauthorizations.length, 1);
    });

    it('succeeds when the creator already disconnected in their Stripe dashboard', async () => {
      stripe.inject('revoked', { accountId });
      await stripeProvider.revoke(grant);
      assert.deepEqual(stripe.deauthorizations, []);
    });

    it('reports an injected server error as transient, and a retry then deauthorizes', async () => {
      stripe.inject('server_error', { accountId });
      await rejectsWith(stripeProvider.revoke(grant), 'transient', /HTTP 500/);
      assert.deepEqual(stripe.deauthorizations, []);
      await stripeProvider.revoke(grant);
      assert.equal(stripe.deauthorizations.length, 1);
    });

    it('reports an unreachable Connect host as transient', async () => {
      const unreachable = `http://127.0.0.1:${await freePort()}`;
      const provider = configuredProviders({ ...settings, stripe: { ...settings.stripe!, connectUrl: unreachable } }).stripe!;
      await rejectsWith(provider.revoke(grant), 'transient');
    });

    it('does not take a refused platform key (invalid_client too) for success: permanent', async () => {
      const provider = configuredProviders({ ...settings, stripe: { ...settings.stripe!, secretKey: 'sk_test_notTheP1atformKey' } }).stripe!;
      await rejectsWith(provider.revoke(grant), 'permanent', /No such API key/);
      assert.deepEqual(stripe.deauthorizations, []);
    });

    it('refuses a grant that names no connected account: permanent', async () => {
      await rejectsWith(stripeProvider.revoke({ ...grant, externalAccountId: null }), 'permanent');
      assert.equal(stripe.calls.filter((c) => c.path === '/oauth/deauthorize').length, 0);
    });
  });
});
