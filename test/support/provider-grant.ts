import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import * as oauth from 'openid-client';
import { ProviderError, type ConnectedAccount, type PlatformProvider } from '../../src/consent/providers.ts';
import { pressOnProviderPage } from './provider-page.ts';

// Nothing listens here: the provider's redirect is read from its Location header, never followed.
export const REDIRECT_URI = 'http://127.0.0.1:9/consent/oauth/callback';

/** The creator's side of the OAuth flow, driven through the provider as the consent flow drives it. */
export async function connectThrough(
  provider: PlatformProvider,
  button: 'Allow' | 'Connect',
  account: string,
  options: { offline: boolean },
): Promise<ConnectedAccount> {
  const state = randomUUID();
  const codeVerifier = provider.usesPkce ? oauth.randomPKCECodeVerifier() : null;
  const page = await provider.authorizationUrl({ redirectUri: REDIRECT_URI, state, codeVerifier, offline: options.offline });
  const callbackUrl = await pressOnProviderPage(page.toString(), button, account);
  return provider.exchange({ callbackUrl, redirectUri: REDIRECT_URI, state, codeVerifier });
}

export async function rejectsWithProviderError(promise: Promise<unknown>, kind: ProviderError['kind'], message?: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ProviderError, `not a ProviderError: ${String(error)}`);
    assert.equal(error.kind, kind, error.message);
    if (message) assert.match(error.message, message);
    return true;
  });
}
