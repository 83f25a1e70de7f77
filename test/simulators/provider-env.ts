import type { GoogleSimulator } from './google.ts';
import type { StripeSimulator } from './stripe.ts';

/** The service's configuration that points its OAuth clients and API clients at the simulators. */
export function providerEnv(google: GoogleSimulator, stripe: StripeSimulator): Record<string, string> {
  return {
    GOOGLE_CLIENT_ID: google.clientId,
    GOOGLE_CLIENT_SECRET: google.clientSecret,
    GOOGLE_AUTHORIZATION_URL: google.endpoints.authorize,
    GOOGLE_TOKEN_URL: google.endpoints.token,
    GOOGLE_REVOKE_URL: google.endpoints.revoke,
    GOOGLE_USERINFO_URL: google.endpoints.userinfo,
    YOUTUBE_ANALYTICS_URL: google.baseUrl,
    STRIPE_CLIENT_ID: stripe.clientId,
    STRIPE_SECRET_KEY: stripe.secretKey,
    STRIPE_CONNECT_URL: stripe.baseUrl,
    STRIPE_API_URL: stripe.endpoints.api,
    PROVIDERS_ALLOW_HTTP: '1',
  };
}
