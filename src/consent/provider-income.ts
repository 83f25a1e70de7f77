import { decryptSecret, encryptSecret } from '../platform/crypto.ts';
import type { Logger } from '../platform/logger.ts';
import { convertToEuro, DEFAULT_RATE_TABLE, type PlatformIncome } from '../tape/index.ts';
import type { CollectionOutcome, IncomeSource, Platform } from '../verifications/verification-lifecycle.ts';
import type { ConnectionWithTokens, ConsentRepository } from './consent-repository.ts';
import { ProviderError, type PlatformProvider } from './providers.ts';

/** Months of income read from each platform: enough for the 12-month figures and the trend. */
const INCOME_MONTHS = 24;
/** Attempts of one provider call on transient errors (bounded, each logged). */
const PROVIDER_ATTEMPTS = 3;

export interface ProviderIncomeDeps {
  consent: Pick<ConsentRepository, 'connectionsWithTokens' | 'replaceTokens'>;
  providers: Partial<Record<Platform, PlatformProvider>>;
  encryptionKey: Buffer;
  logger: Logger;
}

async function withRetries<T>(logger: Logger, what: string, call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const transient = error instanceof ProviderError && error.kind === 'transient';
      logger.warn(
        { what, attempt, error: (error as Error).message },
        transient && attempt < PROVIDER_ATTEMPTS ? 'provider call failed; retrying' : 'provider call failed',
      );
      if (!transient || attempt >= PROVIDER_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** (attempt - 1)));
    }
  }
}

/**
 * Production income: each connected platform's income over the last INCOME_MONTHS months, read
 * with the creator's tokens. A refused or revoked token is `consent_revoked`, a provider error
 * (after bounded retries) `platform_error`; the lifecycle's processing window covers a provider
 * that hangs.
 */
export function providerIncomeSource(deps: ProviderIncomeDeps): IncomeSource {
  /** The access token to read with: as stored at consent, or renewed from the grant for a refresh. */
  type Access = (platform: Platform, provider: PlatformProvider, connection: ConnectionWithTokens, verificationId: string) => Promise<string>;
  const asStored: Access = async (_platform, _provider, connection) => decryptSecret(deps.encryptionKey, connection.accessTokenCiphertext!);
  // A refresh (P33) comes weeks after consent, when the access token is long expired: the grant's
  // refresh token gives a new one, kept encrypted for the next read. A refused grant is `revoked`.
  const renewed: Access = async (platform, provider, connection, verificationId) => {
    const decrypt = (ciphertext: string | null) => (ciphertext ? decryptSecret(deps.encryptionKey, ciphertext) : null);
    const grant = {
      accessToken: decrypt(connection.accessTokenCiphertext)!,
      refreshToken: decrypt(connection.refreshTokenCiphertext),
      externalAccountId: connection.externalAccountId,
    };
    const fresh = await withRetries(deps.logger, `${platform} access`, () => provider.freshAccess(grant));
    if (fresh.accessToken !== grant.accessToken || fresh.refreshToken !== grant.refreshToken) {
      await deps.consent.replaceTokens(verificationId, platform, {
        accessTokenCiphertext: encryptSecret(deps.encryptionKey, fresh.accessToken),
        refreshTokenCiphertext: fresh.refreshToken ? encryptSecret(deps.encryptionKey, fresh.refreshToken) : null,
      });
    }
    return fresh.accessToken;
  };
  const collectWith = async (verification: Parameters<IncomeSource['collect']>[0], now: Date, access: Access): Promise<CollectionOutcome> => {
    const connections = await deps.consent.connectionsWithTokens(verification.id);
    const window = {
      from: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - INCOME_MONTHS, 1)),
      to: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
    };
    const income = new Map<string, Awaited<ReturnType<PlatformProvider['monthlyIncome']>>>();
    for (const connection of connections.filter((c) => c.status === 'connected' && c.accessTokenCiphertext)) {
      const platform = connection.platform as Platform;
      const provider = deps.providers[platform];
      try {
        if (!provider) throw new ProviderError('permanent', `${platform} is not configured`);
        const accessToken = await access(platform, provider, connection, verification.id);
        const reference = { accessToken, externalAccountId: connection.externalAccountId };
        income.set(platform, await withRetries(deps.logger, `${platform} income`, () => provider.monthlyIncome(reference, window)));
      } catch (error) {
        return { kind: 'failed', reason: error instanceof ProviderError && error.kind === 'revoked' ? 'consent_revoked' : 'platform_error', platform };
      }
    }
    const platforms: PlatformIncome[] = verification.creatorPlatforms.map((platform) => {
      const amounts = income.get(platform);
      const connection = connections.find((c) => c.platform === platform);
      return amounts
        ? { platform, status: 'connected' as const, connectedAt: connection?.connectedAt ?? null, months: convertToEuro(DEFAULT_RATE_TABLE, amounts) }
        : { platform, status: 'not_connected' as const, months: [] };
    });
    return { kind: 'collected', platforms };
  };
  return {
    collect: (verification, now) => collectWith(verification, now, asStored),
    collectAgain: (verification, _refresh, now) => collectWith(verification, now, renewed),
  };
}
