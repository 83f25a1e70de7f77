import { youtubeAnalytics } from '@googleapis/youtubeanalytics';
import * as oauth from 'openid-client';
import Stripe from 'stripe';
import type { Config } from '../platform/config.ts';
import { providerCalls } from '../platform/metrics/metrics.ts';
import type { SourceAmount } from '../tape/index.ts';

export type Platform = 'youtube' | 'stripe';

/** Provider endpoints and credentials from configuration (platform/config.ts), so tests point them at the simulators. */
export type ProviderSettings = Config['providers'];

export interface ConnectedAccount {
  email: string | null;
  /** The scopes the creator granted, as the provider's token response names them. */
  scopes: string[];
  externalAccountId: string | null;
  accessToken: string;
  refreshToken: string | null;
}

/**
 * Why a provider call failed, as the verification's failure reason needs it: `revoked` (the creator
 * took access back: consent_revoked), `transient` (worth a bounded retry, then platform_error),
 * `permanent` (platform_error at once).
 */
export class ProviderError extends Error {
  override name = 'ProviderError';
  constructor(
    readonly kind: 'revoked' | 'transient' | 'permanent',
    message: string,
  ) {
    super(message);
  }
}

export interface PlatformProvider {
  readonly platform: Platform;
  /** Origin of the authorization page: the consent page's form-action must allow the redirect there. */
  readonly authorizationOrigin: string;
  readonly usesPkce: boolean;
  /**
   * Where to send the creator to grant access. `offline` asks for access that outlives the consent
   * session (a refresh token, where the provider distinguishes): only ongoing monitoring reads the
   * income again later, and a grant nobody will use again is a standing credential worth not holding.
   */
  authorizationUrl(input: { redirectUri: string; state: string; codeVerifier: string | null; offline: boolean }): Promise<URL>;
  exchange(input: { callbackUrl: URL; redirectUri: string; state: string; codeVerifier: string | null }): Promise<ConnectedAccount>;
  /** Revenue per calendar month from `fromMonth` (YYYY-MM) to the last complete month, in the currency reported. */
  monthlyIncome(account: { accessToken: string; externalAccountId: string | null }, window: { from: Date; to: Date }): Promise<SourceAmount[]>;
  /**
   * Ends the platform's access to the creator's account at the provider, before an erasure deletes
   * the tokens (afterwards nothing could revoke them). Resolves when the grant is gone, including
   * when it already was; throws ProviderError 'transient' (5xx, rate limit, network, timeout: retry
   * later) or 'permanent' (anything else, e.g. the platform's own credentials were refused).
   */
  revoke(grant: { accessToken: string; refreshToken: string | null; externalAccountId: string | null }): Promise<void>;
  /**
   * Credentials to read the income with now, for a read long after the consent (monitoring): the
   * access token stored at consent may have expired since. Returns the refresh token to keep, which
   * may be the one given. Throws ProviderError 'revoked' when the provider refuses the grant (the
   * creator took access back, or it expired), 'transient' (5xx, rate limit, network, timeout: retry
   * later) or 'permanent' (anything else, e.g. the platform's own credentials were refused).
   */
  freshAccess(grant: {
    accessToken: string;
    refreshToken: string | null;
    externalAccountId: string | null;
  }): Promise<{ accessToken: string; refreshToken: string | null }>;
}

export const GOOGLE_SCOPES = ['https://www.googleapis.com/auth/yt-analytics-monetary.readonly', 'email'];

function oauthConfiguration(
  settings: { authorizationUrl: string; tokenUrl: string; revokeUrl?: string; issuer: string },
  clientId: string,
  secret: string,
  allowInsecure: boolean,
) {
  const configuration = new oauth.Configuration(
    {
      issuer: settings.issuer,
      authorization_endpoint: settings.authorizationUrl,
      token_endpoint: settings.tokenUrl,
      ...(settings.revokeUrl ? { revocation_endpoint: settings.revokeUrl } : {}),
    },
    clientId,
    { client_secret: secret },
    oauth.ClientSecretPost(secret),
  );
  if (allowInsecure) oauth.allowInsecureRequests(configuration);
  return configuration;
}

/** OAuth grant errors: a refused or revoked grant is the creator's doing; anything else is the platform's. */
function fromOAuthError(error: unknown): ProviderError {
  const e = error as { error?: string; status?: number; code?: string; message?: string };
  if (e?.error === 'access_denied') return new ProviderError('revoked', 'the creator refused access');
  if (e?.error === 'invalid_grant') return new ProviderError('revoked', `the grant was refused: ${e.message ?? 'invalid_grant'}`);
  if (typeof e?.status === 'number' && e.status >= 500) return new ProviderError('transient', `token endpoint answered ${e.status}`);
  return new ProviderError('transient', `token exchange failed: ${e?.message ?? String(error)}`);
}

/**
 * A failed call to the provider: worth retrying later when the provider or the network failed
 * (5xx, 429, no answer), not when the request itself was refused, which a retry would only repeat.
 */
function callError(what: string, error: unknown, status: number | undefined, noAnswer: boolean): ProviderError {
  const message = `${what} failed: ${error instanceof Error ? error.message : String(error)}`;
  if (status !== undefined) return new ProviderError(status >= 500 || status === 429 ? 'transient' : 'permanent', `${message} (HTTP ${status})`);
  return new ProviderError(noAnswer ? 'transient' : 'permanent', message);
}

/** The HTTP status of an openid-client failure, if there was an answer, and whether there was none. */
function openidFailure(error: unknown): { status: number | undefined; noAnswer: boolean } {
  // openid-client keeps the HTTP response as the cause when the body is no OAuth error (a 503 page).
  const cause = error instanceof Error ? error.cause : undefined;
  const status = error instanceof oauth.ResponseBodyError ? error.status : cause instanceof Response ? cause.status : undefined;
  const code = (error as { code?: unknown }).code;
  // No answer at all: fetch fails with a plain TypeError, openid-client's timeout with OAUTH_TIMEOUT;
  // its own TypeErrors carry an ERR_INVALID_ARG_* code and are programming errors.
  const noAnswer = code === 'OAUTH_TIMEOUT' || code === 'OAUTH_ABORT' || (error instanceof TypeError && code === undefined);
  return { status, noAnswer };
}

const monthOf = (date: Date) => date.toISOString().slice(0, 7);

export function googleProvider(settings: NonNullable<ProviderSettings['google']>, allowInsecure: boolean): PlatformProvider {
  const configuration = oauthConfiguration(
    { ...settings, issuer: new URL(settings.authorizationUrl).origin },
    settings.clientId,
    settings.clientSecret,
    allowInsecure,
  );
  const analytics = youtubeAnalytics({ version: 'v2', rootUrl: settings.apiRootUrl.replace(/\/?$/, '/'), retry: false });
  return {
    platform: 'youtube',
    authorizationOrigin: new URL(settings.authorizationUrl).origin,
    usesPkce: true,
    async authorizationUrl({ redirectUri, state, codeVerifier, offline }) {
      return oauth.buildAuthorizationUrl(configuration, {
        redirect_uri: redirectUri,
        scope: GOOGLE_SCOPES.join(' '),
        state,
        code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier!),
        code_challenge_method: 'S256',
        // Google issues a refresh token only for `offline`; `online` is its documented default for
        // web-server apps, sent anyway so the request itself states that no lasting access is
        // asked for (what a reviewer or a log sees), whatever the default becomes.
        access_type: offline ? 'offline' : 'online',
        include_granted_scopes: 'false',
        // Google's consent screen every time, even for an account that granted access before: a
        // connection someone else began can never complete without the account's owner pressing Allow.
        prompt: 'consent',
      });
    },
    async exchange({ callbackUrl, redirectUri, state, codeVerifier }) {
      let tokens;
      try {
        tokens = await oauth.authorizationCodeGrant(
          configuration,
          callbackUrl,
          { expectedState: state, pkceCodeVerifier: codeVerifier! },
          { redirect_uri: redirectUri },
        );
      } catch (error) {
        throw fromOAuthError(error);
      }
      const granted = String(tokens.scope ?? '').split(' ');
      if (!granted.includes(GOOGLE_SCOPES[0]!)) throw new ProviderError('revoked', 'the creator did not grant the YouTube Analytics monetary scope');
      const userinfo = await fetch(settings.userinfoUrl, { headers: { authorization: `Bearer ${tokens.access_token}` }, signal: AbortSignal.timeout(10_000) });
      const email = userinfo.ok ? (((await userinfo.json()) as { email?: string }).email ?? null) : null;
      return { email, scopes: granted, externalAccountId: null, accessToken: tokens.access_token, refreshToken: tokens.refresh_token ?? null };
    },
    async monthlyIncome({ accessToken }, { from, to }) {
      try {
        const response = await analytics.reports.query(
          {
            ids: 'channel==MINE',
            startDate: `${monthOf(from)}-01`,
            endDate: to.toISOString().slice(0, 10),
            metrics: 'estimatedRevenue',
            dimensions: 'month',
            currency: 'EUR',
          },
          { headers: { authorization: `Bearer ${accessToken}` }, timeout: 20_000 },
        );
        const headers = (response.data.columnHeaders ?? []).map((h) => h.name);
        const monthAt = headers.indexOf('month');
        const revenueAt = headers.indexOf('estimatedRevenue');
        return (response.data.rows ?? []).map((row) => ({ month: String(row[monthAt]), currency: 'EUR', amount: Number(row[revenueAt]) }));
      } catch (error) {
        const status = (error as { status?: number; response?: { status?: number } }).status ?? (error as { response?: { status?: number } }).response?.status;
        if (status === 401 || status === 403) throw new ProviderError('revoked', `YouTube Analytics answered ${status}`);
        if (status === undefined || status >= 500 || status === 429) throw new ProviderError('transient', `YouTube Analytics: ${(error as Error).message}`);
        throw new ProviderError('permanent', `YouTube Analytics answered ${status}: ${(error as Error).message}`);
      }
    },
    async revoke({ accessToken, refreshToken }) {
      // Revoking the refresh token ends the whole grant, every access token minted from it included;
      // the access token is all there is when Google issued no refresh token.
      try {
        await oauth.tokenRevocation(configuration, refreshToken ?? accessToken);
      } catch (error) {
        // Google answers 400 invalid_token for a token it no longer knows: already revoked (by us or
        // by the creator at myaccount.google.com) or expired. Either way the grant is gone, which is
        // the goal, so a repeated erasure must not fail on it.
        if (error instanceof oauth.ResponseBodyError && error.error === 'invalid_token') return;
        const { status, noAnswer } = openidFailure(error);
        throw callError('Google revocation', error, status, noAnswer);
      }
    },
    async freshAccess({ accessToken, refreshToken }) {
      // An online grant has nothing to renew with: its access token is all there is, and the read
      // itself tells whether it still works (an expired one is refused as a revoked one is).
      if (!refreshToken) return { accessToken, refreshToken: null };
      let tokens;
      try {
        tokens = await oauth.refreshTokenGrant(configuration, refreshToken);
      } catch (error) {
        // Google answers invalid_grant for a refresh token the creator revoked, one unused for six
        // months, or one past its time limit: the grant is gone either way and only a new consent helps.
        if (error instanceof oauth.ResponseBodyError && error.error === 'invalid_grant') {
          throw new ProviderError('revoked', `Google refused the refresh token: ${error.error_description ?? error.message}`);
        }
        const { status, noAnswer } = openidFailure(error);
        throw callError('Google token refresh', error, status, noAnswer);
      }
      // Google does not rotate refresh tokens: its answer usually carries none and the old one stays good.
      return { accessToken: tokens.access_token, refreshToken: tokens.refresh_token ?? refreshToken };
    },
  };
}

/** Currencies Stripe counts in whole units rather than cents. */
const ZERO_DECIMAL = new Set(['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf']);

/** Gross volume: what customers paid, less what was refunded to them; fees and payouts are not income. */
const GROSS_VOLUME_TYPES = new Set(['charge', 'payment', 'refund', 'payment_refund']);

export function stripeProvider(settings: NonNullable<ProviderSettings['stripe']>, allowInsecure: boolean): PlatformProvider {
  const configuration = oauthConfiguration(
    { ...settings, issuer: new URL(settings.authorizationUrl).origin },
    settings.clientId,
    settings.secretKey,
    allowInsecure,
  );
  const api = new URL(settings.apiUrl);
  const connect = new URL(settings.connectUrl);
  const stripe = new Stripe(settings.secretKey, {
    host: api.hostname,
    port: Number(api.port || (api.protocol === 'https:' ? 443 : 80)),
    protocol: api.protocol.replace(':', '') as 'http' | 'https',
    maxNetworkRetries: 0,
    timeout: 20_000,
  });
  // The stripe package sends oauth/* to connect.stripe.com with this client's port and protocol, and a
  // request's `host` option replaces that host; so a second client carries Connect's port and protocol.
  const connectClient = new Stripe(settings.secretKey, {
    host: connect.hostname,
    port: Number(connect.port || (connect.protocol === 'https:' ? 443 : 80)),
    protocol: connect.protocol.replace(':', '') as 'http' | 'https',
    maxNetworkRetries: 0,
    timeout: 20_000,
  });
  const classify = (error: unknown): ProviderError => {
    if (error instanceof Stripe.errors.StripePermissionError || error instanceof Stripe.errors.StripeAuthenticationError) {
      return new ProviderError('revoked', `Stripe refused access: ${error.message}`);
    }
    if (
      error instanceof Stripe.errors.StripeAPIError ||
      error instanceof Stripe.errors.StripeConnectionError ||
      error instanceof Stripe.errors.StripeRateLimitError
    ) {
      return new ProviderError('transient', `Stripe: ${(error as Error).message}`);
    }
    return new ProviderError('permanent', `Stripe: ${(error as Error).message}`);
  };
  return {
    platform: 'stripe',
    authorizationOrigin: new URL(settings.authorizationUrl).origin,
    // Stripe Connect's OAuth does not take PKCE; the state bound to the consent session guards the flow.
    usesPkce: false,
    // `offline` is not asked for: a Stripe Connect grant has no online form, it lasts until the
    // account is deauthorized (by the platform or the creator), monitoring or not.
    async authorizationUrl({ redirectUri, state }) {
      return oauth.buildAuthorizationUrl(configuration, { redirect_uri: redirectUri, scope: 'read_only', state });
    },
    async exchange({ callbackUrl, redirectUri, state }) {
      let tokens;
      try {
        tokens = await oauth.authorizationCodeGrant(configuration, callbackUrl, { expectedState: state }, { redirect_uri: redirectUri });
      } catch (error) {
        throw fromOAuthError(error);
      }
      // Stripe Connect's token response names the connected account (a string such as acct_...).
      const accountId = typeof tokens.stripe_user_id === 'string' ? tokens.stripe_user_id : '';
      let email: string | null = null;
      try {
        email = (await stripe.accounts.retrieve(accountId)).email ?? null;
      } catch {
        // The email only serves data-protection requests; a connection works without it.
      }
      const scopes = (typeof tokens.scope === 'string' ? tokens.scope : 'read_only').split(' ');
      return { email, scopes, externalAccountId: accountId, accessToken: tokens.access_token, refreshToken: tokens.refresh_token ?? null };
    },
    async monthlyIncome({ externalAccountId }, { from, to }) {
      const totals = new Map<string, number>();
      try {
        const list = stripe.balanceTransactions.list(
          { limit: 100, created: { gte: Math.floor(from.getTime() / 1000), lt: Math.floor(to.getTime() / 1000) } },
          { stripeAccount: externalAccountId! },
        );
        for await (const transaction of list) {
          if (!GROSS_VOLUME_TYPES.has(transaction.type)) continue;
          const currency = transaction.currency.toLowerCase();
          const amount = ZERO_DECIMAL.has(currency) ? transaction.amount : transaction.amount / 100;
          const key = `${monthOf(new Date(transaction.created * 1000))}|${currency.toUpperCase()}`;
          totals.set(key, (totals.get(key) ?? 0) + amount);
        }
      } catch (error) {
        throw classify(error);
      }
      return [...totals].map(([key, amount]) => {
        const [month, currency] = key.split('|') as [string, string];
        return { month, currency, amount: Math.round(amount * 100) / 100 };
      });
    },
    async revoke({ externalAccountId }) {
      // Stripe has no token revocation: deauthorizing the connected account revokes its tokens.
      if (!externalAccountId) throw new ProviderError('permanent', 'Stripe revocation: the grant names no connected account (stripe_user_id)');
      try {
        await connectClient.oauth.deauthorize({ client_id: settings.clientId, stripe_user_id: externalAccountId }, { host: connect.hostname });
      } catch (error) {
        // Stripe answers 401 invalid_client "This application is not connected to stripe account ..."
        // once the account is disconnected (by us before, or by the creator in their dashboard): the
        // goal state, so success. The same code with another message (an unknown platform key or
        // client_id) is a real failure, hence the match on the message.
        // The package turns an OAuth error's `error` into rawType, which its types do not list.
        const rawType: string | undefined = error instanceof Stripe.errors.StripeError ? error.rawType : undefined;
        if (rawType === 'invalid_client' && /\bnot connected to\b/i.test((error as Error).message)) return;
        const status = error instanceof Stripe.errors.StripeError ? error.statusCode : undefined;
        throw callError('Stripe revocation', error, status, error instanceof Stripe.errors.StripeConnectionError);
      }
    },
    async freshAccess({ accessToken, refreshToken }) {
      // Income is read with the platform's secret key on behalf of the connected account, never with
      // the account's own access token, and the grant lives until deauthorized: nothing to renew.
      // A grant since revoked shows as the read's own refusal.
      return { accessToken, refreshToken };
    },
  };
}

/** What the metrics call each platform's provider: the company answering, not the product. */
const PROVIDER_NAMES: Record<Platform, string> = { youtube: 'google', stripe: 'stripe' };

/**
 * Times and counts the calls that reach the provider (token exchange, income, revocation) by
 * outcome: ok, or the ProviderError kind (revoked, transient, permanent), or error for anything else.
 */
function measured(provider: PlatformProvider): PlatformProvider {
  const name = PROVIDER_NAMES[provider.platform];
  const timed =
    <Args extends unknown[], Result>(call: string, run: (...args: Args) => Promise<Result>) =>
    async (...args: Args): Promise<Result> => {
      const started = performance.now();
      let outcome = 'ok';
      try {
        return await run(...args);
      } catch (error) {
        outcome = error instanceof ProviderError ? error.kind : 'error';
        throw error;
      } finally {
        providerCalls.labels(name, call, outcome).observe((performance.now() - started) / 1000);
      }
    };
  return {
    platform: provider.platform,
    authorizationOrigin: provider.authorizationOrigin,
    usesPkce: provider.usesPkce,
    authorizationUrl: (input) => provider.authorizationUrl(input),
    exchange: timed('exchange', (input) => provider.exchange(input)),
    monthlyIncome: timed('income', (account, window) => provider.monthlyIncome(account, window)),
    revoke: timed('revoke', (grant) => provider.revoke(grant)),
    // Not timed: the metric's `call` values are a documented set (docs/operations.md) that names no
    // token refresh yet; a `refresh` value belongs with the change that starts calling this.
    freshAccess: (grant) => provider.freshAccess(grant),
  };
}

export function configuredProviders(settings: ProviderSettings): Partial<Record<Platform, PlatformProvider>> {
  return {
    ...(settings.google ? { youtube: measured(googleProvider(settings.google, settings.allowInsecureRequests)) } : {}),
    ...(settings.stripe ? { stripe: measured(stripeProvider(settings.stripe, settings.allowInsecureRequests)) } : {}),
  };
}
