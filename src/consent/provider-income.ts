import { decryptSecret } from '../platform/crypto.ts';
import type { Logger } from '../platform/logger.ts';
import { convertToEuro, DEFAULT_RATE_TABLE, type PlatformIncome } from '../tape/index.ts';
import type { CollectionOutcome, IncomeSource, Platform } from '../verifications/verification-lifecycle.ts';
import type { ConsentRepository } from './consent-repository.ts';
import { ProviderError, type PlatformProvider } from './providers.ts';

/** Months of income read from each platform: enough for the 12-month figures and the trend. */
const INCOME_MONTHS = 24;
/** Attempts of one provider call on transient errors (bounded, each logged). */
const PROVIDER_ATTEMPTS = 3;

export interface ProviderIncomeDeps {
  consent: Pick<ConsentRepository, 'connectionsWithTokens'>;
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
  const source: IncomeSource = {
    // A refresh (P33) reads the same months again with the grant the creator gave at consent.
    collectAgain: (verification, _refresh, now) => source.collect(verification, now),
    async collect(verification, now): Promise<CollectionOutcome> {
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
          const accessToken = decryptSecret(deps.encryptionKey, connection.accessTokenCiphertext!);
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
    },
  };
  return source;
}
