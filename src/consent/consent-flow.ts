import { createHash } from 'node:crypto';
import * as oauth from 'openid-client';
import { decryptSecret, encryptSecret } from '../platform/crypto.ts';
import type { Logger } from '../platform/logger.ts';
import { computeTape, convertToEuro, DEFAULT_RATE_TABLE, type TapeInput } from '../tape/index.ts';
import { ProviderError, type PlatformProvider } from './providers.ts';
import { JOB_KINDS, moveVerification, sandboxTapeInput, type LifecycleDeps } from '../verifications/lifecycle.ts';
import type { VerificationRecord } from '../verifications/verifications-repository.ts';

export type Platform = VerificationRecord['creatorPlatforms'][number];

export interface ConsentDeps extends LifecycleDeps {
  /** D18: how long data collection may take after consent before the verification fails with `timeout`. */
  processingWindowMs: number;
  providers: Partial<Record<Platform, PlatformProvider>>;
  encryptionKey: Buffer;
  logger: Logger;
}

/** How long a creator may stay on the provider's consent screen. */
const AUTHORIZATION_WINDOW_MS = 15 * 60 * 1000;
/** Months of income read from each platform: enough for the 12-month figures and the trend. */
const INCOME_MONTHS = 24;
/** Attempts of one provider call on transient errors (bounded, each logged). */
const PROVIDER_ATTEMPTS = 3;

export const callbackPath = (platform: Platform) => `/consent/oauth/${platform}/callback`;

/** What a consent link shows. Unknown, expired and finished links say so and reveal nothing else. */
export type ConsentSession =
  | { kind: 'unknown' }
  | { kind: 'expired' | 'finished'; verification: VerificationRecord }
  | { kind: 'open'; verification: VerificationRecord; connections: Map<string, string> };

export class ConsentRefused extends Error {
  override name = 'ConsentRefused';
  constructor(
    readonly reason: 'already_connected' | 'not_requested' | 'nothing_connected' | 'closed' | 'unavailable' | 'provider_refused',
    message: string,
  ) {
    super(message);
  }
}

export const hashConsentToken = (token: string): string => createHash('sha256').update(token).digest('hex');

export async function openConsentSession(deps: ConsentDeps, token: string): Promise<ConsentSession> {
  if (!/^[A-Za-z0-9]{20,100}$/.test(token)) return { kind: 'unknown' };
  const found = await deps.verifications.findByConsentTokenHash(hashConsentToken(token));
  if (!found) return { kind: 'unknown' };
  const { record, connections } = found;
  if (record.status === 'expired' || (record.status === 'pending_consent' && new Date(record.expiresAt) <= deps.now())) {
    return { kind: 'expired', verification: record };
  }
  if (record.status !== 'pending_consent') return { kind: 'finished', verification: record };
  return { kind: 'open', verification: record, connections };
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
    throw new ConsentRefused('not_requested', `The lender did not ask for ${platform}.`);
  }
  if (connections.get(platform) === 'connected') {
    throw new ConsentRefused('already_connected', `${platform} is already connected for this verification.`);
  }
  if (!allow) return;
  await deps.verifications.transaction((store) =>
    store.setConnections(verification.id, [{ platform, status: 'connected' }], deps.now().toISOString()),
  );
}

/**
 * Starts the provider's authorization code flow: a fresh `state` bound to this consent session (and
 * a PKCE verifier where the provider takes one), stored single-use and encrypted; returns where to
 * send the creator.
 */
export async function startConnection(deps: ConsentDeps, token: string, platform: Platform, publicBaseUrl: string): Promise<URL> {
  const { verification, connections } = await requireOpen(deps, token);
  if (!verification.creatorPlatforms.includes(platform)) throw new ConsentRefused('not_requested', `The lender did not ask for ${platform}.`);
  if (connections.get(platform) === 'connected') throw new ConsentRefused('already_connected', `${platform} is already connected for this verification.`);
  const provider = deps.providers[platform];
  if (!provider) throw new ConsentRefused('unavailable', 'Connecting this platform is not available on this service yet. Please try again later.');
  const state = oauth.randomState();
  const codeVerifier = provider.usesPkce ? oauth.randomPKCECodeVerifier() : null;
  await deps.verifications.insertOAuthRequest({
    stateHash: hashConsentToken(state),
    verificationId: verification.id,
    platform,
    codeVerifierCiphertext: codeVerifier ? encryptSecret(deps.encryptionKey, codeVerifier) : null,
    consentTokenCiphertext: encryptSecret(deps.encryptionKey, token),
    expiresAt: new Date(deps.now().getTime() + AUTHORIZATION_WINDOW_MS).toISOString(),
  });
  return provider.authorizationUrl({ redirectUri: `${publicBaseUrl}${callbackPath(platform)}`, state, codeVerifier });
}

/**
 * The provider sent the creator back: the state must be one this service issued for this platform
 * and still open; the code is exchanged, the tokens stored encrypted. Returns the consent link to
 * return to. A refusal on the provider's screen leaves the platform unconnected.
 */
export async function finishConnection(deps: ConsentDeps, platform: Platform, callbackUrl: URL, publicBaseUrl: string): Promise<{ consentToken: string; connected: boolean }> {
  const state = callbackUrl.searchParams.get('state') ?? '';
  const request = state ? await deps.verifications.takeOAuthRequest(hashConsentToken(state)) : null;
  if (!request || request.platform !== platform || new Date(request.expiresAt) <= deps.now()) {
    throw new ConsentRefused('closed', 'This sign-in has expired or was already used. Start again from the consent link.');
  }
  const consentToken = decryptSecret(deps.encryptionKey, request.consentTokenCiphertext);
  await requireOpen(deps, consentToken);
  if (callbackUrl.searchParams.get('error')) return { consentToken, connected: false };
  const provider = deps.providers[platform];
  if (!provider) throw new ConsentRefused('unavailable', 'Connecting this platform is not available on this service yet.');
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
    throw new ConsentRefused('provider_refused', `${platform === 'youtube' ? 'YouTube' : 'Stripe'} did not grant read access. Try connecting again.`);
  }
  await deps.verifications.saveConnection(request.verificationId, platform, {
    email: account.email,
    externalAccountId: account.externalAccountId,
    accessTokenCiphertext: encryptSecret(deps.encryptionKey, account.accessToken),
    refreshTokenCiphertext: account.refreshToken ? encryptSecret(deps.encryptionKey, account.refreshToken) : null,
    connectedAt: deps.now().toISOString(),
  });
  return { consentToken, connected: true };
}

/** The final step: consent moves the verification to `processing` and schedules the collection and its window. */
export async function completeConsent(deps: ConsentDeps, token: string): Promise<void> {
  const { verification, connections } = await requireOpen(deps, token);
  if (![...connections.values()].includes('connected')) {
    throw new ConsentRefused('nothing_connected', 'Connect at least one platform before giving consent.');
  }
  const now = deps.now();
  await deps.verifications.transaction(async (store) => {
    const current = await store.lock(verification.id);
    if (!current || current.status !== 'pending_consent') throw new ConsentRefused('closed', 'This consent link is no longer open.');
    await moveVerification(store, current, 'consent_completed', { at: now });
    await store.enqueue({ kind: JOB_KINDS.collectIncome, subjectId: verification.id, runAt: now, payload: { lenderId: verification.lenderId } }, now);
    await store.enqueue({ kind: JOB_KINDS.processingWindow, subjectId: verification.id, runAt: new Date(now.getTime() + deps.processingWindowMs) }, now);
  });
}

/**
 * Job: fetch the income and score it. In the sandbox the income is synthetic, for the platforms
 * the creator connected; a requested platform left unconnected becomes an ND code in the tape.
 */
export async function collectIncome(deps: ConsentDeps, job: { verificationId: string; lenderId: string }, now: Date): Promise<void> {
  if (deps.config.mode === 'production') return collectFromProviders(deps, job, now);
  const profile = await deps.scoringProfileOf(job.lenderId);
  await deps.verifications.transaction(async (store) => {
    const verification = await store.lock(job.verificationId);
    if (!verification || verification.status !== 'processing') return;
    const resource = await store.resource(verification);
    const connected = new Set(resource.platform_connections.filter((c) => c.status === 'connected').map((c) => c.platform));
    const tape = computeTape(sandboxTapeInput(verification, profile, now, connected), { now });
    await moveVerification(store, verification, 'tape_computed', { at: now, tape });
  });
}

/** Job: D18, the processing window ended; a verification still processing fails with `timeout`. */
export async function enforceProcessingWindow(deps: ConsentDeps, verificationId: string, now: Date): Promise<void> {
  await deps.verifications.transaction(async (store) => {
    const verification = await store.lock(verificationId);
    if (!verification || verification.status !== 'processing') return;
    await moveVerification(store, verification, 'collection_failed', { at: now, reason: 'timeout' });
  });
}

async function withRetries<T>(deps: ConsentDeps, what: string, call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const transient = error instanceof ProviderError && error.kind === 'transient';
      deps.logger.warn({ what, attempt, error: (error as Error).message }, transient && attempt < PROVIDER_ATTEMPTS ? 'provider call failed; retrying' : 'provider call failed');
      if (!transient || attempt >= PROVIDER_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** (attempt - 1)));
    }
  }
}

/**
 * Production collection: each connected platform's income over the last INCOME_MONTHS months, read
 * with the creator's tokens outside any transaction (provider calls can be slow), then scored. A
 * refused or revoked token fails the verification with `consent_revoked`, a provider error (after
 * bounded retries) with `platform_error`; the processing window job covers a provider that hangs.
 */
async function collectFromProviders(deps: ConsentDeps, job: { verificationId: string; lenderId: string }, now: Date): Promise<void> {
  const profile = await deps.scoringProfileOf(job.lenderId);
  const connections = await deps.verifications.connectionsWithTokens(job.verificationId);
  const window = { from: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - INCOME_MONTHS, 1)), to: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)) };
  const income = new Map<string, Awaited<ReturnType<PlatformProvider['monthlyIncome']>>>();
  let failure: { reason: 'consent_revoked' | 'platform_error'; platform: Platform } | null = null;
  for (const connection of connections.filter((c) => c.status === 'connected' && c.accessTokenCiphertext)) {
    const provider = deps.providers[connection.platform as Platform];
    try {
      if (!provider) throw new ProviderError('permanent', `${connection.platform} is not configured`);
      const accessToken = decryptSecret(deps.encryptionKey, connection.accessTokenCiphertext!);
      income.set(connection.platform, await withRetries(deps, `${connection.platform} income`, () => provider.monthlyIncome({ accessToken, externalAccountId: connection.externalAccountId }, window)));
    } catch (error) {
      failure = { reason: error instanceof ProviderError && error.kind === 'revoked' ? 'consent_revoked' : 'platform_error', platform: connection.platform as Platform };
      break;
    }
  }
  await deps.verifications.transaction(async (store) => {
    const verification = await store.lock(job.verificationId);
    if (!verification || verification.status !== 'processing') return;
    // A provider that answered only after the window closed does not make a late tape (D18).
    if (deps.now().getTime() >= new Date(verification.updatedAt).getTime() + deps.processingWindowMs) {
      await moveVerification(store, verification, 'collection_failed', { at: deps.now(), reason: 'timeout' });
      return;
    }
    if (failure) {
      const status = failure.reason === 'consent_revoked' ? 'revoked' : 'error';
      await store.setConnections(verification.id, [{ platform: failure.platform, status }], now.toISOString());
      await moveVerification(store, verification, 'collection_failed', { at: now, reason: failure.reason });
      return;
    }
    const platforms: TapeInput['platforms'] = verification.creatorPlatforms.map((platform) => {
      const amounts = income.get(platform);
      const connection = connections.find((c) => c.platform === platform);
      return amounts
        ? { platform, status: 'connected' as const, connectedAt: connection?.connectedAt ?? null, months: convertToEuro(DEFAULT_RATE_TABLE, amounts) }
        : { platform, status: 'not_connected' as const, months: [] };
    });
    await store.saveIncome(
      verification.id,
      platforms.flatMap((p) => p.months.map((m) => ({ platform: p.platform, month: m.month, sourceCurrency: m.sourceCurrency, sourceAmount: m.sourceAmount, amountEur: m.amountEur }))),
    );
    const tape = computeTape(
      {
        verificationId: verification.id,
        obligorReference: verification.obligorReference,
        productType: verification.productType,
        platforms,
        jurisdiction: profile.jurisdiction,
        policyOverrides: profile.policies[verification.productType],
        declaredMonthlyObligationsEur: verification.declaredMonthlyObligationsEur,
      },
      { now },
    );
    await moveVerification(store, verification, 'tape_computed', { at: now, tape });
  });
}
