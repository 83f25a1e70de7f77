import { timingSafeEqual } from 'node:crypto';
import * as oauth from 'openid-client';
import { blindIndex, decryptSecret, encryptSecret, sha256Hex } from '../platform/crypto.ts';
import type { Logger } from '../platform/logger.ts';
import type { Platform, VerificationLifecycle } from '../verifications/verification-lifecycle.ts';
import type { VerificationRecord } from '../verifications/verifications-repository.ts';
import type { ConsentRepository } from './consent-repository.ts';
import type { PlatformProvider } from './providers.ts';

export type { Platform } from '../verifications/verification-lifecycle.ts';

/** What the consent pages and OAuth flows need; the lifecycle is reached only through its facade. */
export interface ConsentDeps {
  lifecycle: VerificationLifecycle;
  consent: ConsentRepository;
  providers: Partial<Record<Platform, PlatformProvider>>;
  encryptionKey: Buffer;
  logger: Logger;
  now: () => Date;
  /** The registered name of a lender account (accounts/), shown beside a lender-supplied `lender_name`. */
  registeredLenderName: (lenderId: string) => Promise<string | null>;
}

/**
 * Emails are compared as their lower-cased, trimmed form (P18): providers
 * and people write the domain, and often the local part, in any case. A `+tag` is kept: it is a
 * different address to the provider.
 */
export const normaliseEmail = (email: string): string => email.trim().toLowerCase();

/** The blind index an account email is found by (data-protection requests), from its normalised form. */
export const emailIndex = (encryptionKey: Buffer, email: string): string => blindIndex(encryptionKey, 'account-email', normaliseEmail(email));

/** An account email as it is stored: encrypted, with its blind index. */
export const protectEmail = (encryptionKey: Buffer, email: string) => ({
  ciphertext: encryptSecret(encryptionKey, email),
  index: emailIndex(encryptionKey, email),
});

/** How long a creator may stay on the provider's consent screen. */
const AUTHORIZATION_WINDOW_MS = 15 * 60 * 1000;

export const callbackPath = (platform: Platform) => `/consent/oauth/${platform}/callback`;

/** What a consent link shows. Unknown, expired and finished links say so and reveal nothing else. */
export type ConsentSession =
  | { kind: 'unknown' }
  | { kind: 'expired' | 'finished'; verification: VerificationRecord; registeredLenderName: string | null }
  | { kind: 'open'; verification: VerificationRecord; connections: Map<string, string>; registeredLenderName: string | null };

export class ConsentRefused extends Error {
  override name = 'ConsentRefused';
  constructor(
    readonly reason:
      'already_connected' | 'not_requested' | 'nothing_connected' | 'closed' | 'stale_sign_in' | 'other_browser' | 'unavailable' | 'provider_refused',
    message: string,
    /** The platform the refusal is about, for the page that explains it. */
    readonly platform?: Platform,
  ) {
    super(message);
  }
}

export async function openConsentSession(deps: ConsentDeps, token: string): Promise<ConsentSession> {
  if (!/^[A-Za-z0-9]{20,100}$/.test(token)) return { kind: 'unknown' };
  const found = await deps.lifecycle.findByConsentTokenHash(sha256Hex(token));
  if (!found) return { kind: 'unknown' };
  const { record, connections } = found;
  const registeredLenderName = await deps.registeredLenderName(record.lenderId);
  if (record.status === 'expired' || (record.status === 'pending_consent' && new Date(record.expiresAt) <= deps.now())) {
    return { kind: 'expired', verification: record, registeredLenderName };
  }
  if (record.status !== 'pending_consent') return { kind: 'finished', verification: record, registeredLenderName };
  return { kind: 'open', verification: record, connections, registeredLenderName };
}

async function requireOpen(deps: ConsentDeps, token: string) {
  const session = await openConsentSession(deps, token);
  if (session.kind !== 'open') throw new ConsentRefused('closed', 'This consent link is no longer open.');
  return session;
}

/**
 * The sandbox's simulated provider step (D10: no real OAuth): the creator allows or refuses access
 * on a page the service shows in place of the provider's. Allowing connects the platform.
 */
export async function decideSandboxConnection(deps: ConsentDeps, token: string, platform: Platform, allow: boolean): Promise<void> {
  const { verification, connections } = await requireOpen(deps, token);
  if (!verification.creatorPlatforms.includes(platform)) {
    throw new ConsentRefused('not_requested', `The lender did not ask for ${platform}.`, platform);
  }
  if (connections.get(platform) === 'connected') {
    throw new ConsentRefused('already_connected', `${platform} is already connected for this verification.`, platform);
  }
  if (!allow) return;
  if (!(await deps.lifecycle.connectPlatform(verification.id, platform, async () => {}))) {
    throw new ConsentRefused('closed', 'This consent link is no longer open.');
  }
}

/**
 * Starts the provider's authorization code flow: a fresh `state` bound to this consent session (and
 * a PKCE verifier where the provider takes one), stored single-use and encrypted; returns where to
 * send the creator, and the browser binding: a nonce the caller keeps in a cookie of the browser
 * that asked, without which the callback connects nothing (RFC 9700, 4.7). The state alone would
 * let whoever holds the authorization URL have someone else's account connected to this link.
 */
export async function startConnection(
  deps: ConsentDeps,
  token: string,
  platform: Platform,
  publicBaseUrl: string,
): Promise<{ authorization: URL; state: string; browserBinding: string; expiresAt: Date }> {
  const { verification, connections } = await requireOpen(deps, token);
  if (!verification.creatorPlatforms.includes(platform)) throw new ConsentRefused('not_requested', `The lender did not ask for ${platform}.`, platform);
  if (connections.get(platform) === 'connected') {
    throw new ConsentRefused('already_connected', `${platform} is already connected for this verification.`, platform);
  }
  const provider = deps.providers[platform];
  if (!provider) throw new ConsentRefused('unavailable', 'Connecting this platform is not available on this service yet. Please try again later.', platform);
  const state = oauth.randomState();
  const browserBinding = oauth.randomNonce();
  const codeVerifier = provider.usesPkce ? oauth.randomPKCECodeVerifier() : null;
  const expiresAt = new Date(deps.now().getTime() + AUTHORIZATION_WINDOW_MS);
  await deps.consent.insertOAuthRequest({
    stateHash: sha256Hex(state),
    verificationId: verification.id,
    platform,
    codeVerifierCiphertext: codeVerifier ? encryptSecret(deps.encryptionKey, codeVerifier) : null,
    consentTokenCiphertext: encryptSecret(deps.encryptionKey, token),
    browserBindingHash: sha256Hex(browserBinding),
    expiresAt: expiresAt.toISOString(),
  });
  const authorization = await provider.authorizationUrl({
    redirectUri: `${publicBaseUrl}${callbackPath(platform)}`,
    state,
    codeVerifier,
    // Lasting (offline) access only for a verification that asked for ongoing monitoring (P33): a
    // one-time verification reads once, within the hour an access token lives.
    offline: verification.monitoring !== null,
  });
  return { authorization, state, browserBinding, expiresAt };
}

/** Whether the browser at the callback is the one that began the round trip (hashes compared in constant time). */
function sameBrowser(storedHash: string | null, presented: string | undefined): boolean {
  if (!storedHash || !presented) return false;
  return timingSafeEqual(Buffer.from(sha256Hex(presented), 'hex'), Buffer.from(storedHash, 'hex'));
}

/**
 * The provider sent the creator back: the state must be one this service issued for this platform
 * and still open, and the browser must be the one that began the round trip (its binding cookie);
 * only then is the code exchanged and the tokens stored encrypted. A state is spent by its first
 * callback, from whichever browser: one opened elsewhere cannot be tried again in the right one. Returns the consent link to
 * return to. A refusal on the provider's screen leaves the platform unconnected: `refused` says
 * whether the creator pressed Deny (`access_denied`, RFC 6749 4.1.2.1) or the provider ended the
 * sign-in with another error.
 */
export async function finishConnection(
  deps: ConsentDeps,
  platform: Platform,
  callbackUrl: URL,
  publicBaseUrl: string,
  browserBinding: string | undefined,
): Promise<{ consentToken: string; connected: true } | { consentToken: string; connected: false; refused: 'denied' | 'error' }> {
  const state = callbackUrl.searchParams.get('state') ?? '';
  const request = state ? await deps.consent.takeOAuthRequest(sha256Hex(state)) : null;
  if (!request || request.platform !== platform || new Date(request.expiresAt) <= deps.now()) {
    throw new ConsentRefused('stale_sign_in', 'This sign-in has expired or was already used. Start again from the consent link.');
  }
  if (!sameBrowser(request.browserBindingHash, browserBinding)) {
    // Nothing of the link is shown here: whoever holds this browser may not be the creator.
    deps.logger.warn({ platform, verificationId: request.verificationId }, 'OAuth callback refused: not the browser that began it');
    throw new ConsentRefused('other_browser', 'This sign-in was started in another browser. Nothing was connected.', platform);
  }
  const consentToken = decryptSecret(deps.encryptionKey, request.consentTokenCiphertext);
  await requireOpen(deps, consentToken);
  const error = callbackUrl.searchParams.get('error');
  if (error) return { consentToken, connected: false, refused: error === 'access_denied' ? 'denied' : 'error' };
  const provider = deps.providers[platform];
  if (!provider) throw new ConsentRefused('unavailable', 'Connecting this platform is not available on this service yet.', platform);
  let account;
  try {
    account = await provider.exchange({
      callbackUrl,
      redirectUri: `${publicBaseUrl}${callbackPath(platform)}`,
      state,
      codeVerifier: request.codeVerifierCiphertext ? decryptSecret(deps.encryptionKey, request.codeVerifierCiphertext) : null,
    });
  } catch (error) {
    deps.logger.warn({ platform, verificationId: request.verificationId, reason: (error as Error).message }, 'provider refused the connection');
    throw new ConsentRefused('provider_refused', `${platform === 'youtube' ? 'YouTube' : 'Stripe'} did not grant read access. Try connecting again.`, platform);
  }
  const grant = {
    email: account.email ? protectEmail(deps.encryptionKey, account.email) : null,
    scopes: account.scopes,
    externalAccountId: account.externalAccountId,
    accessTokenCiphertext: encryptSecret(deps.encryptionKey, account.accessToken),
    refreshTokenCiphertext: account.refreshToken ? encryptSecret(deps.encryptionKey, account.refreshToken) : null,
  };
  const saved = await deps.lifecycle.connectPlatform(request.verificationId, platform, (unit, at) =>
    deps.consent.saveGrant(unit, request.verificationId, platform, { ...grant, connectedAt: at }),
  );
  if (!saved) {
    // The link closed while the creator was at the provider (cancelled, declined, erased, expired):
    // nothing is stored, and the grant just made is handed back rather than left open at the provider.
    await provider
      .revoke({ accessToken: account.accessToken, refreshToken: account.refreshToken, externalAccountId: account.externalAccountId })
      .catch((error: unknown) => {
        deps.logger.warn(
          { platform, verificationId: request.verificationId, reason: (error as Error).message },
          'could not hand back the grant of a closed link',
        );
      });
    throw new ConsentRefused('closed', 'This consent link is no longer open.');
  }
  return { consentToken, connected: true };
}

/** The final step: consent moves the verification to `processing`; the lifecycle schedules the collection and its window. */
export async function completeConsent(deps: ConsentDeps, token: string): Promise<void> {
  const { verification, connections } = await requireOpen(deps, token);
  if (![...connections.values()].includes('connected')) {
    throw new ConsentRefused('nothing_connected', 'Connect at least one platform before giving consent.');
  }
  if (!(await deps.lifecycle.recordConsent(verification.id))) throw new ConsentRefused('closed', 'This consent link is no longer open.');
}

/**
 * The creator does not want to share: the verification fails with `consent_declined` and the lender
 * is told by `verification.failed`; nothing is read, whatever was connected.
 */
export async function declineConsent(deps: ConsentDeps, token: string): Promise<void> {
  const { verification } = await requireOpen(deps, token);
  if (!(await deps.lifecycle.decline(verification.id))) throw new ConsentRefused('closed', 'This consent link is no longer open.');
}
