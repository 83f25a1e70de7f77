import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import * as oauth from 'openid-client';
import { configuredProviders, type PlatformProvider, type ProviderSettings } from '../src/consent/providers.ts';
import { loadConfig } from '../src/platform/config.ts';
import { ManualClock } from '../src/platform/clock.ts';
import { ACCESS_TOKEN_TTL_SECONDS, startGoogleSimulator, type GoogleSimulator } from './simulators/google.ts';
import { providerEnv } from './simulators/provider-env.ts';
import { startStripeSimulator, type StripeSimulator } from './simulators/stripe.ts';
import { freePort } from './support/free-port.ts';
import { connectThrough, REDIRECT_URI, rejectsWithProviderError as rejectsWith } from './support/provider-grant.ts';

const WINDOW = { from: new Date('2025-01-01T00:00:00Z'), to: new Date('2026-01-01T00:00:00Z') };

/**
 * What ongoing monitoring needs of the providers: lasting (offline) access asked for only when a
 * later read is wanted, and credentials valid now for that read, long after the consent.
 */
describe('provider access for a later read, against the simulators', function () {
  // The Google simulator's time, so a test can let an access token expire without waiting an hour.
  let clock: ManualClock;
  let google: GoogleSimulator;
  let stripe: StripeSimulator;
  let settings: ProviderSettings;
  let youtube: PlatformProvider;
  let stripeProvider: PlatformProvider;

  beforeEach(async () => {
    clock = new ManualClock('2026-02-01T09:00:00Z');
    google = await startGoogleSimulator({ clock });
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

  const tokenCalls = () => google.calls.filter((c) => c.path === '/token');

  describe('Google', () => {
    const email = 'monitored@example.org';

    beforeEach(() => {
      google.addAccount({ email, channelId: 'UCmonitorAAAAAAAAAAAAAAA', currency: 'EUR', monthlyRevenue: { '2025-06': 10, '2025-07': 20 } });
    });

    const authorizationUrl = async (offline: boolean) =>
      youtube.authorizationUrl({ redirectUri: REDIRECT_URI, state: randomUUID(), codeVerifier: oauth.randomPKCECodeVerifier(), offline });

    it('asks for access_type=offline only when offline access is asked for, and access_type=online otherwise', async () => {
      assert.equal((await authorizationUrl(true)).searchParams.get('access_type'), 'offline');
      assert.equal((await authorizationUrl(false)).searchParams.get('access_type'), 'online');
    });

    it('gets a refresh token from Google for an offline grant, and none for an online one', async () => {
      const offline = await connectThrough(youtube, 'Allow', email, { offline: true });
      assert.match(offline.refreshToken ?? '', /^1\/\/0/);
      const online = await connectThrough(youtube, 'Allow', email, { offline: false });
      assert.equal(online.refreshToken, null);
      const consents = google.calls.filter((c) => c.method === 'POST' && c.path === '/o/oauth2/v2/auth').map((c) => c.body.access_type);
      assert.deepEqual(consents, ['offline', 'online']);
      // Both read the income while their access token lives.
      assert.equal((await youtube.monthlyIncome(offline, WINDOW)).length, 2);
      assert.equal((await youtube.monthlyIncome(online, WINDOW)).length, 2);
    });

    it('renews an expired access token with the refresh token, and the income read then succeeds', async () => {
      const grant = await connectThrough(youtube, 'Allow', email, { offline: true });
      clock.advance(ACCESS_TOKEN_TTL_SECONDS * 1000);
      // Google answers an expired access token with 401, which a read cannot tell from a revoked grant.
      await rejectsWith(youtube.monthlyIncome(grant, WINDOW), 'revoked', /401/);

      const fresh = await youtube.freshAccess(grant);
      assert.notEqual(fresh.accessToken, grant.accessToken);
      // Google does not rotate refresh tokens: the one from the consent is still the one to keep.
      assert.equal(fresh.refreshToken, grant.refreshToken);
      const refresh = tokenCalls().at(-1);
      assert.equal(refresh?.body.grant_type, 'refresh_token');
      assert.equal(refresh?.body.refresh_token, grant.refreshToken);
      assert.deepEqual(await youtube.monthlyIncome({ accessToken: fresh.accessToken, externalAccountId: null }, WINDOW), [
        { month: '2025-06', currency: 'EUR', amount: 10 },
        { month: '2025-07', currency: 'EUR', amount: 20 },
      ]);

      // And again a month later, from the refresh token kept.
      clock.advance(30 * 24 * 3600 * 1000);
      const later = await youtube.freshAccess({ ...grant, ...fresh });
      assert.equal((await youtube.monthlyIncome({ accessToken: later.accessToken, externalAccountId: null }, WINDOW)).length, 2);
    });

    it('throws revoked when the creator revoked the grant at Google, and for a refresh token Google never issued', async () => {
      const grant = await connectThrough(youtube, 'Allow', email, { offline: true });
      google.inject('revoked', { email });
      await rejectsWith(youtube.freshAccess(grant), 'revoked', /Token has been expired or revoked/);
      await rejectsWith(youtube.freshAccess({ ...grant, refreshToken: '1//0neverIssued' }), 'revoked');
    });

    it('throws revoked once the platform itself revoked the grant (monitoring ended)', async () => {
      const grant = await connectThrough(youtube, 'Allow', email, { offline: true });
      await youtube.revoke(grant);
      await rejectsWith(youtube.freshAccess(grant), 'revoked');
    });

    it('hands back the stored access token of an online grant, asking Google nothing', async () => {
      const grant = await connectThrough(youtube, 'Allow', email, { offline: false });
      const before = tokenCalls().length;
      assert.deepEqual(await youtube.freshAccess(grant), { accessToken: grant.accessToken, refreshToken: null });
      assert.equal(tokenCalls().length, before);
    });

    it('reports a 503 from the token endpoint and an unreachable one as transient, and the grant survives both', async () => {
      const grant = await connectThrough(youtube, 'Allow', email, { offline: true });
      google.inject('server_error', { email });
      await rejectsWith(youtube.freshAccess(grant), 'transient', /HTTP 503/);
      const unreachable = `http://127.0.0.1:${await freePort()}/token`;
      const cut = configuredProviders({ ...settings, google: { ...settings.google!, tokenUrl: unreachable } }).youtube!;
      await rejectsWith(cut.freshAccess(grant), 'transient');
      assert.ok((await youtube.freshAccess(grant)).accessToken);
    });

    it("reports the platform's own client credentials refused as permanent, not as the creator's revocation", async () => {
      const grant = await connectThrough(youtube, 'Allow', email, { offline: true });
      const misconfigured = configuredProviders({ ...settings, google: { ...settings.google!, clientSecret: 'GOCSPX-not-the-secret' } }).youtube!;
      await rejectsWith(misconfigured.freshAccess(grant), 'permanent', /HTTP 401/);
    });
  });

  describe('Stripe', () => {
    const accountId = 'acct_monitored00000001';

    beforeEach(() => {
      stripe.addAccount({ accountId, email: 'monitored@example.org', transactions: [{ amount: 5000, currency: 'eur', created: 1748736000, type: 'charge' }] });
    });

    it('asks for the same grant whether offline access is asked for or not', async () => {
      const page = async (offline: boolean) => {
        const url = await stripeProvider.authorizationUrl({ redirectUri: REDIRECT_URI, state: 'same-state', codeVerifier: null, offline });
        return url.toString();
      };
      assert.equal(await page(true), await page(false));
    });

    it('hands the grant back unchanged, asking Stripe nothing, and the income read works with it', async () => {
      const grant = await connectThrough(stripeProvider, 'Connect', accountId, { offline: true });
      const before = stripe.calls.length;
      assert.deepEqual(await stripeProvider.freshAccess(grant), { accessToken: grant.accessToken, refreshToken: grant.refreshToken });
      assert.equal(stripe.calls.length, before);
      assert.equal((await stripeProvider.monthlyIncome(grant, WINDOW)).length, 1);
    });
  });
});
